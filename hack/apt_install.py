#!/usr/bin/env python3
"""Install Debian packages the project needs, only those missing, with the machine's apt.

    apt_install.py GROUP...        install every package listed for GROUP in hack/debian-packages.txt
    apt_install.py --check GROUP   exit 1 and name the missing packages, install nothing

hack/debian-packages.txt is the one place these names live: one `GROUP: package package ...` line per
group (image builds, the real node, ...). `apt-get update` runs once, and only when a package is
missing, so a warm run asks no registry. Needs root (CI and the dev machines run as root).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

LIST = pathlib.Path(__file__).resolve().parent / "debian-packages.txt"


def groups() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for number, line in enumerate(LIST.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, packages = line.partition(":")
        if not sep or not packages.split():
            sys.exit(f"apt_install: {LIST.name}:{number}: expected 'group: package ...'")
        found[name.strip()] = packages.split()
    return found


def missing(packages: list[str]) -> list[str]:
    absent = []
    for package in packages:
        query = subprocess.run(
            ["dpkg-query", "-W", "-f=${db:Status-Status}", package], capture_output=True, text=True
        )
        if query.stdout.strip() != "installed":
            absent.append(package)
    return absent


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [arg for arg in argv if arg != "--check"]
    known = groups()
    unknown = [name for name in names if name not in known]
    if not names or unknown:
        print(f"apt_install: name groups of {LIST.name}: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    wanted = [package for name in names for package in known[name]]
    absent = missing(wanted)
    if not absent:
        return 0
    if check:
        print(f"apt_install: missing Debian packages: {' '.join(absent)}", file=sys.stderr)
        return 1
    print(f"apt_install: installing {' '.join(absent)}", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *absent], check=True, env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
