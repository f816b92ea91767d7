#!/usr/bin/env python3
"""Self time per op in a Chrome trace written by `detkit benchmark --profile` or by
torchvision_peer.py --profile: the top ops, their share of the traced time and call counts.

    op_profile.py TRACE.json [--top 25]
"""
import argparse
import collections
import json


def self_times(events):
    """Per op name: (self microseconds, calls). Nesting is by time containment per thread."""
    totals = collections.defaultdict(lambda: [0.0, 0])
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[e.get("tid")].append(e)
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [event, children's time]
        for e in thread_events:
            while stack and e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"]:
                close(stack.pop(), totals)
            if stack:
                stack[-1][1] += e["dur"]
            stack.append([e, 0.0])
        while stack:
            close(stack.pop(), totals)
    return totals


def close(entry, totals):
    event, children = entry
    totals[event["name"]][0] += max(event["dur"] - children, 0.0)
    totals[event["name"]][1] += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with open(args.trace) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    totals = self_times(events)
    all_self = sum(t for t, _ in totals.values())
    print(f"{'op':<48} {'self s':>8} {'share':>7} {'calls':>7}")
    for name, (t, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"{name[:48]:<48} {t / 1e6:8.3f} {100 * t / all_self:6.1f}% {calls:7d}")
    print(f"{'all ops':<48} {all_self / 1e6:8.3f}")


if __name__ == "__main__":
    main()
