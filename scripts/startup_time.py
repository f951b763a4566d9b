"""How long `grpo-skill --help` and `grpo-skill new my-run --preset thinking` take from a fresh process (issue 23 asks
for at most 0.10 s and 0.6 s on the development machine).

    python scripts/startup_time.py                        # this checkout's grpo-skill, 11 runs of each
    python scripts/startup_time.py --runs 15 OLD NEW      # two checkouts, each with .venv/bin/grpo-skill, interleaved

Each command runs as a user runs it (the console script, output to /dev/null); `new` renders into a fresh temporary
folder each time. One untimed run of each comes first, so that the file cache and jinja's cache of compiled
templates are warm, as they are from a user's second `new` on. Checkouts are interleaved run by run, so that both
see the same load. Printed per command: the median wall time (what the issue counts) and the median CPU time of the
process and the processes it waited for (git), which a machine shared with other work disturbs less. Byte code: a
checkout that runs with PYTHONDONTWRITEBYTECODE set has no .pyc files of its own unless `python -m compileall`
made them; compile each checkout the same way before comparing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(args: list[str], cwd: str | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its waited-for children)."""
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def new_project(executable: str) -> tuple[float, float]:
    folder = tempfile.mkdtemp()
    try:
        return timed([executable, "new", "my-run", "--preset", "thinking"], cwd=folder)
    finally:
        shutil.rmtree(folder)


COMMANDS = {"--help": lambda executable: timed([executable, "--help"]), "new": new_project}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/startup_time.py", description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", type=Path, help="folders with .venv/bin/grpo-skill (default: the "
                                                                 "grpo-skill next to this Python)")
    parser.add_argument("--runs", type=int, default=11, help="timed runs of each command (default 11)")
    args = parser.parse_args(argv)
    executables = ({str(folder): str(folder / ".venv" / "bin" / "grpo-skill") for folder in args.checkouts}
                   or {"grpo-skill": str(Path(sys.executable).with_name("grpo-skill"))})
    for executable in executables.values():
        for measure in COMMANDS.values():
            measure(executable)
    runs = {(name, command): [] for name in executables for command in COMMANDS}
    loads = [os.getloadavg()[0]]
    for _ in range(args.runs):
        for name, executable in executables.items():
            for command, measure in COMMANDS.items():
                runs[name, command].append(measure(executable))
        loads.append(os.getloadavg()[0])
    print(f"{args.runs} runs each, load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs")
    for (name, command), measured in runs.items():
        walls, cpus = zip(*measured)
        print(f"{name}  {command:6s}  wall median {statistics.median(walls) * 1000:5.0f} ms "
              f"(min {min(walls) * 1000:5.0f})  CPU median {statistics.median(cpus) * 1000:5.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
