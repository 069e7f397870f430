"""Web oracle latency: /api/position (value, predicted score, every move's value) under a local load loop, JSON out.

    python benchmarks/web.py [--dir DIR] [--url URL] [--requests 1000] [--min-seeds 20] [--max-seeds 28]

Without --url it starts `awele serve` on a free local port on the tables in
DIR (the default tables folder when left out), waits until the search
process has opened its tables (a short search), measures, and stops the
server; with --url it measures a server already running. Each request asks
for a new random position with min..max seeds (either side to move, captured
counts that leave the game going), one at a time over one keep-alive
connection, after 20 unmeasured warm-up requests. Reported: percentiles of
the latency seen by the client and of the server's own time (its
Server-Timing header), the server's start-up time to its first answer, and
the resident memory of the server and of its search process after start-up
and after the loop (no layer is read whole at start-up).
"""

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse

WARM_UP = 20


def random_position(seeds, rng):
    """A position with `seeds` seeds, either side to move, captured counts
    under 25 each and within the 48 seeds."""
    cuts = sorted(rng.randint(0, seeds) for _ in range(11))
    houses = [b - a for a, b in zip([0] + cuts, cuts + [seeds])]
    south = rng.randint(0, min(24, 48 - seeds))
    north = rng.randint(0, min(24, 48 - seeds - south))
    return (f"{'-'.join(map(str, houses[:6]))}/{'-'.join(map(str, houses[6:]))} "
            f"{rng.choice('SN')} {south}:{north}")


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def resident_mib(pid):
    """Resident memory of a process in MiB (Linux), or None."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def children(pid):
    """Process ids of the direct children of `pid` (Linux)."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(x) for x in handle.read().split()]
    except OSError:
        pass
    return found


class Client:
    def __init__(self, url):
        parsed = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port or 80, timeout=120)

    def post(self, path, body):
        """(status, data, seconds at the client, milliseconds at the server)."""
        payload = json.dumps(body).encode()
        started = time.perf_counter()
        self.connection.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        data = json.loads(response.read())
        seconds = time.perf_counter() - started
        timing = response.getheader("server-timing") or ""
        server_ms = float(timing.split("dur=")[1]) if "dur=" in timing else None
        return response.status, data, seconds, server_ms


def wait_until_up(url, process, limit=300):
    started = time.perf_counter()
    parsed = urllib.parse.urlsplit(url)
    while True:
        try:
            with socket.create_connection((parsed.hostname, parsed.port), timeout=1):
                pass
            connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
            connection.request("GET", "/api/info")
            if connection.getresponse().status == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the server stopped with status {process.returncode}")
        if time.perf_counter() - started > limit:
            raise SystemExit("the server did not answer")
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="Tables folder for the server this script starts.")
    parser.add_argument("--url", default=None, help="Measure this running server instead.")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--min-seeds", type=int, default=20)
    parser.add_argument("--max-seeds", type=int, default=28)
    parser.add_argument("--seed", type=int, default=1, help="Random seed of the positions.")
    args = parser.parse_args()

    process = None
    url = args.url
    if url is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [sys.executable, "-m", "solver", "serve", "--port", str(port)]
        if args.dir:
            command += ["--dir", args.dir]
        process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
    try:
        startup_seconds = wait_until_up(url, process)
        memory = {}
        if process is not None:
            memory["server_mib_at_start"] = resident_mib(process.pid)
        client = Client(url)
        status, data, settle_seconds, _ = client.post("/api/search", {"time": 0.01, "move_values": False})
        if status != 200:
            raise SystemExit(f"the search process did not start: {data}")
        if process is not None:
            memory["search_process_mib_after_start"] = sum(resident_mib(pid) or 0 for pid in children(process.pid))

        rng = random.Random(args.seed)
        positions = [random_position(rng.randint(args.min_seeds, args.max_seeds), rng)
                     for _ in range(WARM_UP + args.requests)]
        client_ms, server_ms, errors, without_tables = [], [], [], 0
        for number, position in enumerate(positions):
            status, data, seconds, server = client.post("/api/position", {"position": position})
            if status != 200:
                errors.append(f"{position}: {status} {data}")
                continue
            if not data["tables"] and not data["over"]:
                without_tables += 1
            if number >= WARM_UP:
                client_ms.append(seconds * 1000)
                server_ms.append(server)
        if process is not None:
            memory["server_mib_after_loop"] = resident_mib(process.pid)
    finally:
        if process is not None:
            process.terminate()
            process.wait(30)

    result = {
        "benchmark": "web",
        "endpoint": "POST /api/position",
        "url": url if args.url else "started by this script",
        "requests": len(client_ms),
        "seeds": [args.min_seeds, args.max_seeds],
        "errors": errors[:10],
        "positions_without_tables": without_tables,
        "startup_seconds": round(startup_seconds, 3),
        "settle_seconds": round(settle_seconds, 3),
        "client_ms": {name: round(value, 2) for name, value in (
            ("p50", percentile(client_ms, 0.5)), ("p95", percentile(client_ms, 0.95)),
            ("p99", percentile(client_ms, 0.99)), ("max", max(client_ms)), ("mean", statistics.mean(client_ms)))},
        "server_ms": {name: round(value, 2) for name, value in (
            ("p50", percentile(server_ms, 0.5)), ("p95", percentile(server_ms, 0.95)),
            ("p99", percentile(server_ms, 0.99)), ("max", max(server_ms)), ("mean", statistics.mean(server_ms)))},
        "memory": {name: None if value is None else round(value, 1) for name, value in memory.items()},
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))
    print(f"/api/position, {result['requests']} positions of {args.min_seeds}..{args.max_seeds} seeds: "
          f"p95 {result['server_ms']['p95']:.1f} ms at the server, {result['client_ms']['p95']:.1f} ms at the client "
          f"(p50 {result['server_ms']['p50']:.1f} / {result['client_ms']['p50']:.1f} ms)")


if __name__ == "__main__":
    main()
