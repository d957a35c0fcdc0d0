#!/usr/bin/env bash
# Install the real brokers `acksim live` starts: the Debian packages redis-server and
# rabbitmq-server (the Python clients and moto come with `pip install 'acksim[live]'`, which
# `make setup` installs). Runs apt-get only as root, with apt-get present, and only when a
# binary is missing; the packages' own system services are kept from starting and stopped and
# disabled afterwards (tools/apt-install.sh): acksim starts private instances on free loopback
# ports. Where it cannot install it prints one line saying so and exits 0 (the live tests then
# skip, naming the command that installs them). Idempotent.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

if have redis-server && have rabbitmq-server; then
    exit 0
fi
"$(dirname "$0")/apt-install.sh" install-brokers redis-server rabbitmq-server -- rabbitmq-server redis-server epmd
if command -v epmd >/dev/null 2>&1; then  # a system epmd on 4369 (0.0.0.0), started by the package
    ERL_EPMD_PORT=4369 epmd -kill >/dev/null 2>&1 || true
fi
