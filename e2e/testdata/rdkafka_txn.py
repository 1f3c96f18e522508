#!/usr/bin/env python3
"""librdkafka's transactional producer and read_committed consumer
against a broker, through Debian's python3-confluent-kafka.

Usage: rdkafka_txn.py BOOTSTRAP TOPIC

Commits one transaction of keys c0..c9, aborts one of a0..a9, commits
one of d0..d4, then reads TOPIC with isolation.level=read_committed
from the start and prints one line per record (key) and "eof" when it
reached the end of every partition. Exits non-zero on any error.
"""
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]

p = Producer({
    "bootstrap.servers": bootstrap,
    "transactional.id": "rdkafka-" + topic,
    "transaction.timeout.ms": 30000,
    "enable.idempotence": True,
})
p.init_transactions(30)


def txn(prefix, n, commit):
    p.begin_transaction()
    for i in range(n):
        p.produce(topic, key=f"{prefix}{i}", value=f"{prefix}{i}")
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)


txn("c", 10, True)
txn("a", 10, False)
txn("d", 5, True)

c = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": "rdkafka-" + topic,
    "isolation.level": "read_committed",
    "auto.offset.reset": "earliest",
    "enable.partition.eof": True,
    "enable.auto.commit": False,
})
md = c.list_topics(topic, timeout=30)
parts = sorted(md.topics[topic].partitions)
c.assign([TopicPartition(topic, q, 0) for q in parts])
at_eof = set()
while len(at_eof) < len(parts):
    m = c.poll(30)
    if m is None:
        raise SystemExit("no message or partition EOF within 30 s")
    if m.error():
        if m.error().code() == -191:  # _PARTITION_EOF
            at_eof.add(m.partition())
            continue
        raise KafkaException(m.error())
    print(m.key().decode())
c.close()
print("eof")
