#!/bin/sh
# Install the Debian packages the tests run for real, unless each is present: headless Chromium
# and its driver (the browser tests) and ripgrep (the exact-search benchmark's reference, whose
# smoke run is in the suite). Idempotent, quiet and non-interactive; uses sudo only when not root.
set -eu

missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
[ -x /usr/bin/chromedriver ] || missing="$missing chromium-driver"
command -v rg >/dev/null 2>&1 || missing="$missing ripgrep"
if [ -z "$missing" ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo -n"
else
    echo "ensure_test_packages: missing and not root (no sudo); install the Debian packages:$missing" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "ensure_test_packages: installing$missing with apt-get" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086 # one word a package
if ! { $SUDO apt-get update -qq && \
        $SUDO apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "ensure_test_packages: apt-get failed" >&2
    exit 1
fi

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || ! command -v rg >/dev/null 2>&1; then
    echo "ensure_test_packages: apt-get finished but chromium, chromedriver or rg is missing" >&2
    exit 1
fi
