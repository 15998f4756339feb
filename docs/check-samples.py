#!/usr/bin/env python3
"""Runs the book's shell samples, so that what a newcomer pastes works as written.

Every fenced ```sh (or ```bash) block of the Getting started and Guides pages, and of the
README, is run: a
page's blocks in order, in one bash (`set -euo pipefail`, so variables carry from one
block to the next), in a fresh temporary directory, with `boomerang` on PATH. Each page
runs in a network namespace of its own that has only a loopback interface, so the samples
use the documented 127.0.0.1:8080, ./.boomerang and port 9000 without meeting anything
else on this machine, and several pages run at once.

What a page tells the runner, in HTML comments (invisible in the book):

  <!-- samples: serve listen -->   start `boomerang serve --dev > serve.log` (127.0.0.1:8080,
                                   data in ./.boomerang) and/or `boomerang listen --port 9000
                                   > listen.log` in the page's directory before its first
                                   block, as Getting started does, and wait until they answer
  <!-- sample: timeout 120 -->     the next block's time limit in seconds (default 60)
  <!-- sample: not run: REASON --> the next block is not run; the runner lists it with REASON

A block fails the page if it exits non-zero or runs past its time limit; the page's
output, and the logs of the servers the runner started, are then printed.

Usage: docs/check-samples.py [--bin target/debug/boomerang] [--jobs 4] [--show] [PAGE.md ...]
(--show prints each page's output, also when it passes: what the ```text blocks show.)
Needs root, or unprivileged user namespaces (unshare --user --map-root-user).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

DOCS = Path(__file__).resolve().parent
PAGES = ["getting-started", "guides"]
DEFAULT_TIMEOUT = 60
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w-]*)")
DIRECTIVE = re.compile(r"<!--\s*(samples?):\s*(.*?)\s*-->")


class Block:
    def __init__(self, line, text, timeout, not_run):
        self.line, self.text, self.timeout, self.not_run = line, text, timeout, not_run


def parse(path):
    """A page's blocks, and the services it asks for."""
    services, blocks = set(), []
    timeout, not_run = DEFAULT_TIMEOUT, None
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        for kind, value in DIRECTIVE.findall(line):
            if kind == "samples":
                services |= set(value.split())
            elif value.startswith("timeout "):
                timeout = int(value.split()[1])
            elif value.startswith("not run:"):
                not_run = value[len("not run:"):].strip()
                if not not_run:
                    sys.exit(f"{path}:{i + 1}: a block not run must say why")
            else:
                sys.exit(f"{path}:{i + 1}: unknown sample directive: {value}")
        fence = FENCE.match(line)
        if fence:
            # A fence may be indented (a block in a list item): its lines lose as much.
            indent, marker, lang = len(fence.group(1)), fence.group(2), fence.group(3)
            start = i
            i += 1
            body = []
            while i < len(lines) and not lines[i].strip().startswith(marker):
                text = lines[i]
                body.append(text[indent:] if text[:indent].strip() == "" else text.lstrip())
                i += 1
            if lang in ("sh", "bash", "shell"):
                blocks.append(Block(start + 1, "\n".join(body) + "\n", timeout, not_run))
            timeout, not_run = DEFAULT_TIMEOUT, None
        i += 1
    unknown = services - {"serve", "listen"}
    if unknown:
        sys.exit(f"{path}: unknown services {sorted(unknown)}")
    return services, blocks


# ── Inside a page's network namespace ───────────────────────────────────────────────────


def wait_until(check, what, deadline_s, log=None):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.1)
    tail = log.read_text()[-2000:] if log and log.exists() else ""
    raise RuntimeError(f"{what} did not answer within {deadline_s} s\n{tail}")


def ready():
    with urllib.request.urlopen("http://127.0.0.1:8080/readyz", timeout=2) as r:
        return r.status == 200


def port_open(port):
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


def inside(page, binary, show):
    """Runs one page's samples; prints one JSON line with the outcome; exits 0 or 1."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if subprocess.run(["ip", "route", "get", "1.1.1.1"], capture_output=True).returncode == 0:
        sys.exit("refusing to run samples: this namespace has a route off the machine")
    path = Path(page)
    services, blocks = parse(path)
    root = Path(tempfile.mkdtemp(prefix="boomerang-sample-"))
    work, logs = root / "work", root / "logs"
    work.mkdir()
    logs.mkdir()
    bindir = root / "bin"
    bindir.mkdir()
    os.symlink(binary, bindir / "boomerang")
    env = {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(root),
        "LANG": "C.UTF-8",
    }
    started = []
    result = {"page": page, "ok": False, "run": 0, "seconds": 0.0}
    t0 = time.monotonic()
    try:
        if "serve" in services:
            log = work / "serve.log"
            started.append(log)
            subprocess.Popen(["boomerang", "serve", "--dev"], cwd=work, env=env,
                             stdout=log.open("w"), stderr=subprocess.STDOUT)
            wait_until(ready, "boomerang serve", 30, log)
        if "listen" in services:
            log = work / "listen.log"
            started.append(log)
            subprocess.Popen(["boomerang", "listen", "--port", "9000"], cwd=work, env=env,
                             stdout=log.open("w"), stderr=subprocess.STDOUT)
            wait_until(lambda: port_open(9000), "boomerang listen", 30, log)
        result.update(run_blocks(blocks, work, env, logs / "page.log"))
        if not result["ok"] or show:
            result["log"] = (logs / "page.log").read_text()[-20000:]
            result["services"] = {p.name: p.read_text()[-3000:] for p in started if p.exists()}
    except RuntimeError as e:
        result["error"] = str(e)
    result["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result), flush=True)
    # The page's directory goes with it (the services die with the namespace's first
    # process, `--kill-child`, once this one exits).
    shutil.rmtree(root, ignore_errors=True)
    sys.exit(0 if result["ok"] else 1)


def run_blocks(blocks, work, env, log_path):
    """The page's blocks in one bash; a marker written to a pipe before each block tells
    which one is running."""
    runnable = [(n, b) for n, b in enumerate(blocks) if b.not_run is None]
    read_fd, write_fd = os.pipe()
    script = ["set -euo pipefail"]
    for n, block in runnable:
        script += [f"echo {n} >&{write_fd}", block.text]
    script.append(f"echo done >&{write_fd}")
    script_path = log_path.parent / "page.sh"
    script_path.write_text("\n".join(script) + "\n")
    log = log_path.open("w")
    proc = subprocess.Popen(["bash", str(script_path)], cwd=work, env=env, stdout=log,
                            stderr=subprocess.STDOUT, pass_fds=(write_fd,),
                            start_new_session=True)
    os.close(write_fd)
    current = {"block": None, "since": time.monotonic(), "done": False}

    def follow():
        with os.fdopen(read_fd) as marks:
            for mark in marks:
                mark = mark.strip()
                if mark == "done":
                    current["done"] = True
                else:
                    current["block"], current["since"] = int(mark), time.monotonic()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    outcome = {"ok": False, "run": 0}
    while True:
        try:
            code = proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            n = current["block"]
            if n is not None and time.monotonic() - current["since"] > blocks[n].timeout:
                os.killpg(proc.pid, 9)
                proc.wait()
                outcome["failed_line"] = blocks[n].line
                outcome["reason"] = f"timed out after {blocks[n].timeout} s"
                return outcome
    reader.join(timeout=2)
    outcome["run"] = len(runnable)
    if code == 0 and current["done"]:
        outcome["ok"] = True
    else:
        n = current["block"]
        outcome["failed_line"] = blocks[n].line if n is not None else 0
        outcome["reason"] = f"exit code {code}"
    return outcome


# ── Outside: one namespace per page ─────────────────────────────────────────────────────


def run_page(page, binary, show):
    netns = ["unshare", "--net", "--pid", "--fork", "--kill-child"]
    if os.geteuid() != 0:
        netns[1:1] = ["--user", "--map-root-user"]
    cmd = netns + [sys.executable, __file__, "--inside", str(page), "--bin", binary]
    cmd += ["--show"] if show else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    try:
        return json.loads(last)
    except json.JSONDecodeError:
        return {"page": str(page), "ok": False, "error": proc.stdout[-2000:] + proc.stderr[-2000:]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*")
    parser.add_argument("--bin", default=str(DOCS.parent / "target" / "debug" / "boomerang"))
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--show", action="store_true", help="print each page's output")
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    args = parser.parse_args()
    binary = os.path.abspath(args.bin)
    if args.inside:
        return inside(args.inside, binary, args.show)
    if not os.access(binary, os.X_OK):
        sys.exit(f"missing {binary}: cargo build --bin boomerang")
    if not shutil.which("jq"):
        sys.exit("the samples use jq: install it (apt-get install jq)")
    pages = [Path(p).resolve() for p in args.pages] or [DOCS.parent / "README.md"] + sorted(
        p for d in PAGES for p in (DOCS / "src" / d).rglob("*.md")
    )
    not_run, to_run = [], []
    for page in pages:
        _, blocks = parse(page)
        rel = page.relative_to(DOCS.parent)
        not_run += [(rel, b) for b in blocks if b.not_run is not None]
        if any(b.not_run is None for b in blocks):
            to_run.append(page)
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(lambda p: run_page(p, binary, args.show), to_run):
            rel = Path(result["page"]).relative_to(DOCS.parent)
            if result.get("ok"):
                print(f"ok      {rel}: {result['run']} blocks in {result['seconds']} s")
                if args.show:
                    print(result.get("log", ""))
                continue
            failed += 1
            where = f":{result['failed_line']}" if "failed_line" in result else ""
            print(f"FAILED  {rel}{where}: {result.get('reason') or result.get('error', '')}")
            if result.get("log"):
                print("  --- the page's output (tail):")
                print("  " + result["log"].replace("\n", "\n  "))
            for name, text in result.get("services", {}).items():
                print(f"  --- {name} (tail):")
                print("  " + text.replace("\n", "\n  "))
    for rel, block in not_run:
        print(f"not run {rel}:{block.line}: {block.not_run}")
    print(f"samples: {len(to_run) - failed} pages passed, {failed} failed, "
          f"{len(not_run)} blocks not run")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
