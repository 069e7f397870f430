"""Per layer, the longest distance to conversion, where it occurs and how the
distances are spread, from the table files: JSON and an SVG plot.

    python scripts/distance_findings.py [--dir databases] [--layers 0-16]
                                        [--json docs/distances.json] [--svg docs/distances.svg]

A distance is the number of plies to the next capture (or end of the game)
when the side ahead converts as fast as it can and the side behind holds out
as long as it can, neither giving up any value (docs/FORMAT.md, issue 51).
Every position of each layer is counted (solver.distance.distance_spread,
which gives back from the values and one ply what the files leave out); each
longest position is checked against Tablebase.distance. The layers default
to every layer of the folder that holds distances. docs/DISTANCES.md
presents the result.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from solver import Position, index, tables
from solver.distance import distance_spread
from solver.probe import Tablebase

WIDTH, HEIGHT = 920, 760
PANEL_LEFT, PANEL_RIGHT = 70, 800  # x range of both panels' plots
LONGEST_TOP, LONGEST_BOTTOM = 50, 320
SPREAD_TOP, SPREAD_BOTTOM = 420, 700
AHEAD, BEHIND = "#1b7837", "#b2182b"


def layer_range(text):
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def position_of(seeds, rank):
    """The position of `rank` in layer `seeds`, South to move (boards are mover-view)."""
    return Position.from_mover_board([int(x) for x in index.unrank(seeds, rank)], "S")


def layer_findings(directory, seeds, tablebase):
    """The findings of one layer as JSON-able data."""
    values = tables.load_values(directory, seeds)
    distance, overflow = tables.load_distances(directory, seeds)
    spread = distance_spread(seeds, values, distance, overflow)
    sides = {}
    for side, counts, longest, rank, sign in (("ahead", spread.ahead, spread.longest_ahead, spread.rank_ahead, 1),
                                              ("behind", spread.behind, spread.longest_behind, spread.rank_behind, -1)):
        total = int(counts.sum())
        found = {"positions": total, "longest": None, "where": None, "value": None,
                 "mean": None if total == 0 else float((np.arange(counts.shape[0]) * counts).sum() / total),
                 "histogram": {str(d): int(c) for d, c in enumerate(counts) if c}}
        if rank >= 0:
            position = position_of(seeds, rank)
            checked = tablebase.distance(position)
            if checked != longest:
                raise SystemExit(f"layer {seeds}: the longest distance {longest} at {position} is {checked} by "
                                 "Tablebase.distance")
            found.update({"longest": longest, "where": str(position), "value": tablebase.value(position)})
            assert (found["value"] > 0) == (sign > 0), "the side of the longest position"
        sides[side] = found
    longest = max((sides[s]["longest"] for s in sides if sides[s]["longest"] is not None), default=None)
    both = spread.ahead + spread.behind
    return {
        "seeds": seeds,
        "positions": index.layer_size(seeds),
        "with_distance": int(both.sum()),
        "longest": longest,
        "longest_where": next((sides[s]["where"] for s in ("behind", "ahead") if sides[s]["longest"] == longest),
                              None),
        "overflow_rows": int(overflow.shape[0]),
        "histogram": {str(d): int(c) for d, c in enumerate(both) if c},
        "ahead": sides["ahead"],
        "behind": sides["behind"],
    }


def svg_plot(layers):
    """Two panels: the longest distance per layer (each side), and the share
    of a layer's positions (value not 0) at each distance, log scale."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    seeds = [layer["seeds"] for layer in layers]
    top = max([layer["longest"] or 0 for layer in layers] + [1])
    y_max = max(10, -(-top // 10) * 10)

    def x_of_layer(n):
        return PANEL_LEFT + (n - min(seeds)) * (PANEL_RIGHT - PANEL_LEFT) / max(1, max(seeds) - min(seeds))

    def y_longest(d):
        return LONGEST_BOTTOM - d * (LONGEST_BOTTOM - LONGEST_TOP) / y_max

    out.append(f'<text x="{PANEL_LEFT}" y="{LONGEST_TOP - 20}" font-size="15" font-weight="bold">'
               'Longest distance to conversion (plies to the next capture or end) per layer</text>')
    out += _axes(LONGEST_TOP, LONGEST_BOTTOM, [(x_of_layer(n), str(n)) for n in seeds],
                 [(y_longest(d), str(d)) for d in range(0, y_max + 1, max(10, y_max // 8 // 10 * 10))],
                 "seeds on the board", "plies")
    for side, colour in (("ahead", AHEAD), ("behind", BEHIND)):
        points = [(x_of_layer(layer["seeds"]), y_longest(layer[side]["longest"])) for layer in layers
                  if layer[side]["longest"] is not None]
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y in points) + '"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in points]
    out += _legend(PANEL_LEFT + 10, LONGEST_TOP + 10, [(AHEAD, "side ahead to move (converts as fast as it can)"),
                                                         (BEHIND, "side behind to move (holds out as long as it can)")])

    shown = [layer for layer in layers if layer["with_distance"] >= 1000]  # the smallest layers say little
    longest = max([int(d) for layer in shown for d in layer["histogram"]] + [1])
    x_max = max(10, -(-longest // 20) * 20)
    floor = 1e-8

    def x_of_distance(d):
        return PANEL_LEFT + d * (PANEL_RIGHT - PANEL_LEFT) / x_max

    def y_share(share):
        low, high = np.log10(floor), 0.0
        return SPREAD_BOTTOM - (np.log10(max(share, floor)) - low) * (SPREAD_BOTTOM - SPREAD_TOP) / (high - low)

    out.append(f'<text x="{PANEL_LEFT}" y="{SPREAD_TOP - 20}" font-size="15" font-weight="bold">'
               'Share of a layer\'s positions (value not 0) at each distance</text>')
    out += _axes(SPREAD_TOP, SPREAD_BOTTOM, [(x_of_distance(d), str(d)) for d in range(0, x_max + 1, 20)],
                 [(y_share(10.0 ** -k), f"1e-{k}" if k else "1") for k in range(0, 9)], "plies", "share")
    keys = []
    for number, layer in enumerate(shown):
        shade = number / max(1, len(shown) - 1)
        colour = f"rgb({int(30 + 200 * shade)},{int(90 + 60 * (1 - shade))},{int(200 - 170 * shade)})"
        total = layer["with_distance"]
        points = sorted((int(d), c / total) for d, c in layer["histogram"].items())
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="'
                   + " ".join(f"{x_of_distance(d):.1f},{y_share(share):.1f}" for d, share in points) + '"/>')
        keys.append((colour, f'{layer["seeds"]} seeds'))
    out += _legend(PANEL_RIGHT + 12, SPREAD_TOP + 10, keys)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _axes(top, bottom, x_ticks, y_ticks, x_label, y_label):
    lines = [f'<line x1="{PANEL_LEFT}" y1="{bottom}" x2="{PANEL_RIGHT}" y2="{bottom}" stroke="black"/>',
             f'<line x1="{PANEL_LEFT}" y1="{top}" x2="{PANEL_LEFT}" y2="{bottom}" stroke="black"/>']
    for x, text in x_ticks:
        lines.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 5}" stroke="black"/>')
        lines.append(f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">{text}</text>')
    for y, text in y_ticks:
        lines.append(f'<line x1="{PANEL_LEFT - 5}" y1="{y:.1f}" x2="{PANEL_RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        lines.append(f'<text x="{PANEL_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{text}</text>')
    lines.append(f'<text x="{(PANEL_LEFT + PANEL_RIGHT) / 2}" y="{bottom + 36}" text-anchor="middle">{x_label}</text>')
    lines.append(f'<text x="{PANEL_LEFT - 50}" y="{(top + bottom) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 {PANEL_LEFT - 50} {(top + bottom) / 2})">{y_label}</text>')
    return lines


def _legend(x, y, keys):
    lines = []
    for number, (colour, text) in enumerate(keys):
        row = y + 16 * number
        lines.append(f'<line x1="{x}" y1="{row}" x2="{x + 18}" y2="{row}" stroke="{colour}" stroke-width="3"/>')
        lines.append(f'<text x="{x + 24}" y="{row + 4}">{text}</text>')
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="databases")
    parser.add_argument("--layers", type=layer_range, default=None,
                        help="e.g. 0-16 (default: every layer of the folder with distances)")
    parser.add_argument("--json", default=os.path.join("docs", "distances.json"))
    parser.add_argument("--svg", default=os.path.join("docs", "distances.svg"))
    args = parser.parse_args()
    layers = args.layers if args.layers is not None else [
        n for n in tables.built_layers(args.dir) if tables.has_distances(args.dir, n)]
    if not layers:
        raise SystemExit(f"no layer with distances in {args.dir}: build them with `awele build`")
    started = time.perf_counter()
    found = []
    with Tablebase(args.dir) as tablebase:
        for seeds in layers:
            found.append(layer_findings(args.dir, seeds, tablebase))
            layer = found[-1]
            print(f"layer {seeds:2d}: longest {layer['longest']} plies at {layer['longest_where']}", file=sys.stderr)
    result = {
        "metric": "plies to the next capture or end of the game, the side ahead converting as fast as it can and "
                  "the side behind holding out as long as it can, the value kept; none where the value is 0",
        "layers": found,
        "seconds": round(time.perf_counter() - started, 1),
        "command": "python scripts/distance_findings.py " + " ".join(sys.argv[1:]),
    }
    with open(args.json, "w") as handle:
        json.dump(result, handle, indent=1)
        handle.write("\n")
    with open(args.svg, "w") as handle:
        handle.write(svg_plot(found))
    print(f"wrote {args.json} and {args.svg}", file=sys.stderr)


if __name__ == "__main__":
    main()
