#!/usr/bin/env bash
# Installs the system packages the tests use when the machine lacks them:
# kcat (librdkafka's client, a real non-Go Kafka client), tmux (drives
# `qk top` in its end-to-end test), zookeeper (a real ZooKeeper server
# for cluster tests) and curl (the runnable blocks of the docs call the
# admin HTTP server with it: e2e's TestDocsRunnable). Needs root; apt-get only runs when something is
# missing, so a prepared machine pays nothing.
set -euo pipefail

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v curl >/dev/null 2>&1 || missing+=(curl)
ls /usr/share/java/zookeeper.jar >/dev/null 2>&1 || missing+=(zookeeper)
# librdkafka's transactional producer for the e2e transaction tests, as
# Debian's python3 sees it (a pyenv python3 on PATH would not).
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || missing+=(python3-confluent-kafka)
command -v java >/dev/null 2>&1 || { echo "ensure-deps: java not found (Java 17 is expected on the machine)" >&2; exit 1; }

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "ensure-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-deps: need root to apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/qk-apt.log 2>&1; then
  # Package lists may be stale on a fresh machine: refresh once and retry.
  apt-get update >>/tmp/qk-apt.log 2>&1 || true
  apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/qk-apt.log 2>&1 || {
    echo "ensure-deps: apt-get install ${missing[*]} failed; see /tmp/qk-apt.log" >&2
    tail -20 /tmp/qk-apt.log >&2
    exit 1
  }
fi
echo "ensure-deps: installed ${missing[*]}"
