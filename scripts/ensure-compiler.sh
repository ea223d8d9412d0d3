#!/usr/bin/env bash
# pip install builds ingest/_syscore_src/, the C core of the truss and strace parsers: it needs a C
# compiler and the headers of the Python that builds it. A fresh Debian machine may have neither,
# so install them (as ensure-chromium.sh does for the browser tests). Without them perfkb still
# installs and gives the same results, with the parsers in pure Python (about 20x slower on big
# captures), and tests/test_syscore.py says so.
set -euo pipefail
PY="${1:-python3}"
inc="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
if command -v cc >/dev/null 2>&1 && [ -f "$inc/Python.h" ]; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "no C compiler or no $inc/Python.h: the C core will not be built" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
pkgs="gcc libc6-dev"
if [ ! -f "$inc/Python.h" ]; then pkgs="$pkgs python3-dev"; fi
echo "installing $pkgs to build perfkb's C core..."
if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null; }; then
  echo "could not install $pkgs: the C core will not be built" >&2
fi
