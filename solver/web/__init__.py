"""The web oracle: an HTTP API over the tables and the page that uses it.

``create_app(directory)`` (solver.web.app) makes the FastAPI app that
`awele serve` runs with uvicorn; it needs the web extra
(``pip install 'awele[web]'``). solver.engine decides and holds what the
answers say, without HTTP; solver.web.worker runs the slow ones in a
process of their own.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    # FastAPI is imported only when the app is wanted: the worker process
    # imports this package too, and needs none of it.
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module 'solver.web' has no attribute {name!r}")


__all__ = ["create_app"]
