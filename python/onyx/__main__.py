"""`python -m onyx [model.onnx]`: the version and providers, and for a model its
inputs and outputs."""

import sys

import onyx


def main(argv: list[str]) -> int:
    print(f"onyx {onyx.__version__}; providers: {', '.join(onyx.get_available_providers())}")
    for path in argv:
        try:
            session = onyx.InferenceSession(path)
        except (onyx.OnyxError, RuntimeError) as error:
            print(f"{path}: {error}", file=sys.stderr)
            return 1
        meta = session.get_modelmeta()
        print(f"{path}: producer '{meta.producer_name}', graph '{meta.graph_name}'")
        for arg in session.get_inputs():
            print(f"  input  {arg.name}: {arg.type} {arg.shape}")
        for arg in session.get_outputs():
            print(f"  output {arg.name}: {arg.type} {arg.shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
