"""The package's version, in a module that imports nothing: the table files
record it and the faces say it, without reaching up into the package."""

__version__ = "0.1.0"
