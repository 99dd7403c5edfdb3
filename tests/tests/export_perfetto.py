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
    gpu_root = by_name.get("GPU samples")
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
    gpu_tracks = [u for u, d in tracks.items() if gpu_root is not None and d.parent_uuid == gpu_root]
    out["frame_slices"] = begins.get(frames, 0)
    out["gpu_slices"] = sum(begins.get(u, 0) for u in gpu_tracks)
    out["gpu_tracks"] = sorted(tracks[u].name for u in gpu_tracks)
    out["counter_tracks"] = sorted(d.name for d in tracks.values() if d.HasField("counter"))
    out["counter_values"] = {tracks[u].name: n for u, n in counter_values.items()}
    out["process"] = [{"pid": d.process.pid, "name": d.process.process_name}
                      for d in tracks.values() if d.HasField("process")]
    names = set()
    for _, _, e in events:
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN and e.track_uuid in gpu_tracks:
            names.add(e.name)
    out["gpu_slice_names"] = sorted(names)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
