"""Decodes a Perfetto trace written by `framescope export --perfetto` with Perfetto's own
published protobuf classes (the PyPI `perfetto` package's generated perfetto_trace_pb2) and
prints what tests/tests/export.rs checks, as one JSON object. Exit 3: the decoder is missing."""

import json
import sys

try:
    from google.protobuf.unknown_fields import UnknownFieldSet
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:
    print(f"cannot import Perfetto's trace protos ({e}): run `cargo xtask install-deps` "
          "(PyPI: perfetto, protobuf>=6.31.1)", file=sys.stderr)
    sys.exit(3)


def unknown(msg):
    """Fields the published proto does not declare, in msg and the messages it holds."""
    n = len(UnknownFieldSet(msg))
    for field, value in msg.ListFields():
        if field.type == field.TYPE_MESSAGE:
            values = value if field.is_repeated else [value]
            n += sum(unknown(v) for v in values)
    return n


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    out = {"packets": len(trace.packet), "unknown_fields": unknown(trace), "errors": []}
    err = out["errors"].append
    seqs = {p.trusted_packet_sequence_id for p in trace.packet}
    out["sequence_ids"] = sorted(seqs)
    first = trace.packet[0] if trace.packet else None
    out["first_clears_state"] = bool(
        first and first.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED)
    tracks = {}
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in tracks:
                err(f"track {d.uuid} declared twice")
            tracks[d.uuid] = d
    by_name = {d.name: u for u, d in tracks.items()}
    frames = by_name.get("frames (CPU, present to present)")
    events = []
    for i, p in enumerate(trace.packet):
        if p.HasField("track_event"):
            e = p.track_event
            if e.track_uuid not in tracks:
                err(f"event on undeclared track {e.track_uuid}")
            if p.timestamp_clock_id != pb.BUILTIN_CLOCK_MONOTONIC:
                err(f"packet {i} not on CLOCK_MONOTONIC")
            events.append((p.timestamp, i, e))
    # Perfetto orders events by timestamp, keeping file order for equal ones: slices must
    # nest in that order on every track.
    events.sort(key=lambda t: (t[0], t[1]))
    stacks = {}
    begins = {}
    counter_values = {}
    for ts, _, e in events:
        st = stacks.setdefault(e.track_uuid, [])
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            st.append((ts, e.name))
            begins[e.track_uuid] = begins.get(e.track_uuid, 0) + 1
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            if not st:
                err(f"slice end without begin on track {e.track_uuid} at {ts}")
            else:
                st.pop()
        elif e.type == pb.TrackEvent.TYPE_COUNTER:
            if not tracks.get(e.track_uuid, pb.TrackDescriptor()).HasField("counter"):
                err(f"counter value on a track without CounterDescriptor {e.track_uuid}")
            counter_values[e.track_uuid] = counter_values.get(e.track_uuid, 0) + 1
    for u, st in stacks.items():
        if st:
            err(f"{len(st)} slice(s) left open on track {u}")
    out["frame_slices"] = begins.get(frames, 0)
    display = by_name.get("display (frames on screen; dropped frames as instants)")
    hitches = by_name.get("hitches (stutter frames and their causes)")
    out["display_slices"] = begins.get(display, 0)
    out["display_instants"] = sum(
        1 for _, _, e in events if e.track_uuid == display and e.type == pb.TrackEvent.TYPE_INSTANT)
    out["hitch_slices"] = begins.get(hitches, 0)
    out["hitch_names"] = [e.name for _, _, e in events
                          if e.track_uuid == hitches and e.type == pb.TrackEvent.TYPE_SLICE_BEGIN]
    out["counter_tracks"] = sorted(d.name for d in tracks.values() if d.HasField("counter"))
    out["counter_values"] = {tracks[u].name: n for u, n in counter_values.items()}
    out["process"] = [{"pid": d.process.pid, "name": d.process.process_name}
                      for d in tracks.values() if d.HasField("process")]
    gpu_side(trace, out, err)
    print(json.dumps(out))


def gpu_side(trace, out, err):
    """GpuRenderStageEvents and GpuCounterEvents: every interned id they use was interned
    earlier on the sequence, the events of one hardware queue nest, and every counter value
    has a counter spec."""
    specs, contexts = {}, {}
    stages = []
    counter_specs, gpu_values, valued_without_spec = {}, {}, 0
    for i, p in enumerate(trace.packet):
        if p.HasField("interned_data"):
            for s in p.interned_data.gpu_specifications:
                specs[s.iid] = s
            for c in p.interned_data.graphics_contexts:
                contexts[c.iid] = c
        if p.HasField("gpu_render_stage_event"):
            e = p.gpu_render_stage_event
            if p.timestamp_clock_id != pb.BUILTIN_CLOCK_MONOTONIC:
                err(f"packet {i} not on CLOCK_MONOTONIC")
            if not p.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
                err(f"render stage packet {i} uses interned ids without SEQ_NEEDS_INCREMENTAL_STATE")
            for what, iid in (("hw queue", e.hw_queue_iid), ("stage", e.stage_iid)):
                if iid not in specs:
                    err(f"render stage packet {i}: {what} iid {iid} not interned before it")
            if e.context not in contexts:
                err(f"render stage packet {i}: context {e.context} not interned before it")
            stages.append((p.timestamp, i, e))
        if p.HasField("gpu_counter_event"):
            g = p.gpu_counter_event
            for s in g.counter_descriptor.specs:
                counter_specs[s.counter_id] = s.name
            for c in g.counters:
                name = counter_specs.get(c.counter_id)
                if name is None:
                    valued_without_spec += 1
                else:
                    gpu_values[name] = gpu_values.get(name, 0) + 1
    if valued_without_spec:
        err(f"{valued_without_spec} GPU counter value(s) without a counter spec before them")
    # Events of one hardware queue must nest (Perfetto files them as scoped slices).
    stages.sort(key=lambda t: (t[0], t[1]))
    open_ends, ids = {}, set()
    for ts, i, e in stages:
        st = open_ends.setdefault(e.hw_queue_iid, [])
        while st and st[-1] <= ts:
            st.pop()
        end = ts + e.duration
        if st and end > st[-1]:
            err(f"render stage packet {i} overlaps its queue's open event without nesting")
        st.append(end)
        if e.event_id in ids:
            err(f"event id {e.event_id} used twice")
        ids.add(e.event_id)
    queues = {e.hw_queue_iid for _, _, e in stages}
    out["gpu_slices"] = len(stages)
    out["gpu_tracks"] = sorted(specs[q].name for q in queues if q in specs)
    out["gpu_slice_names"] = sorted({e.name for _, _, e in stages})
    out["gpu_stages"] = sorted({specs[e.stage_iid].name for _, _, e in stages if e.stage_iid in specs})
    out["gpu_counters"] = sorted(counter_specs.values())
    out["gpu_counter_values"] = gpu_values
    out["contexts"] = [{"pid": c.pid, "api": c.api} for c in contexts.values()]


if __name__ == "__main__":
    main(sys.argv[1])
