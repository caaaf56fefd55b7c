#!/bin/sh
# A stand-in for a coding agent: it reports its life through $MAM_PUBLISH_CMD, the command line
# that `mam delegate` (or `mam-remote run`) hands it, exactly as a real agent would.
#   STEPS=3 STEP_SECONDS=1 FAIL=0 examples/fake-agent.sh
set -eu
steps=${STEPS:-3}
pause=${STEP_SECONDS:-1}
echo "fake agent: job $JOB_ID, attempt $MAM_ATTEMPT_ID, brief: $MAM_JOB_BRIEF"
$MAM_PUBLISH_CMD --event started --heartbeat 5 >/dev/null
i=1
while [ "$i" -le "$steps" ]; do
  sleep "$pause"
  $MAM_PUBLISH_CMD --event progress --detail "step $i of $steps" --data "{\"step\": $i}" >/dev/null
  i=$((i + 1))
done
if [ "${FAIL:-0}" = 1 ]; then
  $MAM_PUBLISH_CMD --event error --detail "gave up" >/dev/null
  exit 1
fi
$MAM_PUBLISH_CMD --event completed --detail "done: $MAM_JOB_BRIEF" >/dev/null
