#!/bin/sh
# Install Debian's headless Chromium and its driver for the browser tests, unless both are present.
# Idempotent, quiet and non-interactive; uses sudo only when not already root.
set -eu

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo -n"
else
    echo "ensure_browser: chromium/chromedriver missing and not root (no sudo); install the" \
        "Debian packages 'chromium' and 'chromium-driver'" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "ensure_browser: installing chromium and chromium-driver with apt-get" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -qq && \
        $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver; } \
        >"$log" 2>&1; then
    cat "$log" >&2
    echo "ensure_browser: apt-get failed" >&2
    exit 1
fi

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    echo "ensure_browser: apt-get finished but /usr/bin/chromium or /usr/bin/chromedriver is missing" >&2
    exit 1
fi
