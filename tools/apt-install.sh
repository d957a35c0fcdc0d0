#!/usr/bin/env bash
# apt-install.sh WHAT PACKAGE... [-- SERVICE...]: install Debian packages whose system services
# acksim does not want running (it starts private servers of its own): apt-get only as root,
# with apt-get present (else one line on stderr naming the command, and exit 0); the services
# are kept from starting during the install (a temporary policy-rc.d), then stopped and
# disabled. WHAT names the caller in its messages. Used by install-brokers.sh and
# install-postgres.sh, which call it only when a binary is missing.
set -euo pipefail

what=$1
shift
packages=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do packages+=("$1"); shift; done
[ $# -gt 0 ] && shift
services=("$@")

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$what: not root or no apt-get: ${packages[*]} not installed" \
         "(run as root: apt-get install -y --no-install-recommends ${packages[*]})" >&2
    exit 0
fi
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod +x "$policy"
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
if ! apt-cache show "${packages[0]}" >/dev/null 2>&1; then
    apt-get update -q
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
if [ "$made_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
for svc in "${services[@]}"; do
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl disable --now "$svc" >/dev/null 2>&1 || true
        systemctl disable --now "$svc.socket" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$svc" ]; then
        "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
        update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
done
echo "$what: ${packages[*]} installed; their system services stopped and disabled"
