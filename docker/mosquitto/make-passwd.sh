#!/bin/sh
# Usage: make-passwd.sh FILE
# Writes mosquitto's password file from the environment, so that no secret is ever stored in the
# repository or the image: run at each container start (docker-compose.yaml), and by the tests.
# mosquitto_passwd -b takes the password on its command line, visible to `ps` in the container
# for an instant; there is no non-interactive alternative in mosquitto 2.0.
set -eu
file=$1
: "${MAM_AGENT_PASSWORD:?MAM_AGENT_PASSWORD is not set}"
: "${MAM_OBSERVER_PASSWORD:?MAM_OBSERVER_PASSWORD is not set}"
umask 077
rm -f "$file"
mosquitto_passwd -c -b "$file" mam_agent "$MAM_AGENT_PASSWORD"
mosquitto_passwd -b "$file" mam_observer "$MAM_OBSERVER_PASSWORD"
