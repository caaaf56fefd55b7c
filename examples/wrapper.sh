#!/usr/bin/env bash
# The delegation flow by hand, for those who prefer their own wrapper to `mam delegate`:
# register, watch before the agent starts, launch it, branch on the watcher's exit code.
#   examples/wrapper.sh "Fix the flaky test" examples/fake-agent.sh
set -euo pipefail
brief=${1:?usage: wrapper.sh BRIEF AGENT_COMMAND}
agent=${2:?usage: wrapper.sh BRIEF AGENT_COMMAND}
here=$(cd "$(dirname "$0")/.." && pwd)
mam() { node "$here/bin/$1.js" "${@:2}"; }

job=$(mam mam-register --brief "$brief" --heartbeat 10 --ack-timeout 60 | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).job_id')
record=$(mam mam show --job "$job")
field() { node -pe "JSON.parse(process.argv[1])[process.argv[2]]" "$record" "$1"; }

# Watch first, so nothing the agent publishes is missed; SUBSCRIBED on stderr means ready.
fifo=$(mktemp -u); mkfifo "$fifo"
mam mam-subscribe --job "$job" 2>"$fifo" &
watcher=$!
grep -q -m1 SUBSCRIBED <"$fifo"; cat "$fifo" >&2 & rm -f "$fifo"

JOB_ID=$job MAM_JOB_BRIEF=$brief MAM_DISPATCH_TOKEN=$(field dispatch_token) MAM_ATTEMPT_ID=$(field attempt_id) \
  MAM_PUBLISH_CMD="node $here/bin/mam-publish.js --job $job" sh -c "$agent" >&2 &
agent_pid=$!

set +e
wait "$watcher"; outcome=$?
set -e
case $outcome in
  0) echo "job $job completed" >&2 ;;
  1) echo "job $job ended in error or was cancelled" >&2 ;;
  2) echo "job $job timed out; closing it" >&2; kill "$agent_pid" 2>/dev/null || true
     mam mam-close --job "$job" --request deadline_timeout >/dev/null ;;
  3) echo "broker unreachable; job $job left as it is" >&2 ;;
esac
wait "$agent_pid" 2>/dev/null || true
exit "$outcome"
