#!/usr/bin/env bash
# Install the real brokers `acksim live` starts: the Debian packages redis-server and
# rabbitmq-server (the Python clients and moto come with `pip install 'acksim[live]'`, which
# `make setup` installs). Runs apt-get only as root, with apt-get present, and only when a
# binary is missing; the packages' own system services are kept from starting (a temporary
# policy-rc.d) and stopped and disabled afterwards: acksim starts private instances on free
# loopback ports. Where it cannot install it prints one line saying so and exits 0 (the live
# tests then skip, naming the command that installs them). Idempotent.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

if have redis-server && have rabbitmq-server; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-brokers: not root or no apt-get: redis-server/rabbitmq-server not installed" \
         "(run as root: apt-get install -y --no-install-recommends redis-server rabbitmq-server)" >&2
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
if ! apt-cache show rabbitmq-server >/dev/null 2>&1; then
    apt-get update -q
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server rabbitmq-server
if [ "$made_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
for svc in rabbitmq-server redis-server epmd; do
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl disable --now "$svc" >/dev/null 2>&1 || true
        systemctl disable --now "$svc.socket" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$svc" ]; then
        "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
        update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
done
if command -v epmd >/dev/null 2>&1; then  # a system epmd on 4369 (0.0.0.0), started by the package
    ERL_EPMD_PORT=4369 epmd -kill >/dev/null 2>&1 || true
fi
echo "install-brokers: redis-server and rabbitmq-server installed; their system services stopped and disabled"
