"""Runs ONNX backend cases through onnxruntime for `onyx conformance --compare
onnxruntime`. Reads tab-separated lines (name, model path, data-set folders
joined by '|', rtol, atol, light flag) from the file given as argv[1] and
prints one line per case: "PASS name" or "FAIL name: reason". Each case runs
in a forked child, so a crash in onnxruntime fails that case only. The
comparison mirrors onyx's: |got - want| <= atol + rtol * |want|, NaN == NaN,
integers, booleans and strings exactly."""
import glob
import os
import re
import sys


def numbered(folder, prefix):
    files = glob.glob(os.path.join(folder, prefix + "*.pb"))
    key = lambda p: int(re.search(r"(\d+)\.pb$", p).group(1))
    return sorted((f for f in files if re.search(prefix + r"\d+\.pb$", f)), key=key)


def load(path, type_proto):
    import onnx
    from onnx import numpy_helper
    data = open(path, "rb").read()
    kind = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return numpy_helper.to_optional(opt)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def compare(got, want, rtol, atol, what):
    import numpy as np
    if want is None:
        return "" if got is None else f"{what}: expected an empty optional"
    if got is None:
        return f"{what}: got an empty optional"
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{what}: sequence length differs"
        for i, (g, w) in enumerate(zip(got, want)):
            r = compare(g, w, rtol, atol, f"{what}[{i}]")
            if r:
                return r
        return ""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.dtype != want.dtype:
        return f"{what}: type {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "fc":
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        same_nan = np.isnan(g) & np.isnan(w)
        ok = same_nan | (g == w) | (np.abs(g - w) <= atol + rtol * np.abs(w))
    else:
        ok = got == want
    bad = int(np.size(ok) - np.count_nonzero(ok))
    return f"{what}: {bad} of {want.size} values differ" if bad else ""


def run_case(model_path, data_sets, rtol, atol, light):
    import numpy as np
    import onnx
    import onnxruntime as ort
    model = onnx.load(model_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    inits = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in inits]
    outputs = list(model.graph.output)
    if light:
        feeds = {}
        for x in graph_inputs:
            shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
            n = int(np.prod(shape))
            feeds[x.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
        prefix = os.path.splitext(model_path)[0]
        sets = [(feeds, numbered(os.path.dirname(prefix), os.path.basename(prefix) + "_output_"))]
    else:
        sets = []
        for folder in data_sets:
            inputs = numbered(folder, "input_")
            feeds = {graph_inputs[i].name: load(f, graph_inputs[i].type) for i, f in enumerate(inputs)}
            sets.append((feeds, numbered(folder, "output_")))
    for feeds, expected in sets:
        got = session.run(None, feeds)
        if len(got) != len(expected):
            return f"gave {len(got)} outputs, expected {len(expected)}"
        for i, path in enumerate(expected):
            r = compare(got[i], load(path, outputs[i].type), rtol, atol, f"output '{outputs[i].name}'")
            if r:
                return r
    return ""


def main():
    import onnxruntime  # noqa: F401  (import once, before forking)
    for line in open(sys.argv[1]):
        name, model, sets, rtol, atol, light = line.rstrip("\n").split("\t")
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            try:
                reason = run_case(model, [s for s in sets.split("|") if s], float(rtol), float(atol), light == "1")
            except Exception as e:  # noqa: BLE001 - any failure of the case is its result
                reason = f"{type(e).__name__}: {e}"
            os.write(write_fd, (reason or "PASS").replace("\n", " ")[:500].encode())
            os._exit(0)
        os.close(write_fd)
        chunks = []
        while True:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
        message = b"".join(chunks).decode(errors="replace")
        if os.WIFSIGNALED(status):
            print(f"FAIL {name}: onnxruntime crashed with signal {os.WTERMSIG(status)}", flush=True)
        elif message == "PASS":
            print(f"PASS {name}", flush=True)
        else:
            print(f"FAIL {name}: {message or 'no result'}", flush=True)


if __name__ == "__main__":
    main()
