"""Drafts tests/conformance/expected_failures.txt from an `onyx conformance
--report` file. Every line it writes still needs a person to check that the
reason is specific and true; known reasons for cases that can never match
are filled in from KNOWN below.

    build/onyx conformance ../shared/onnx-backend-data --report /tmp/report.txt
    python tests/conformance/make_expected.py /tmp/report.txt > tests/conformance/expected_failures.txt
"""
import re
import sys

# Cases whose expected values cannot be reproduced by any correct runtime.
KNOWN = {
    "test_bernoulli": "random op: expected values come from numpy's generator, not reproducible",
    "test_training_dropout": "random mask in training mode: expected values come from numpy's generator",
    "test_dft_inverse": "case data: the expected imaginary parts hold float32 rounding noise (1.9e-7) above atol 1e-7; onyx computes ~1e-15",
}


def reason_for(name, message):
    for prefix, reason in KNOWN.items():
        if name.startswith(prefix):
            return reason
    m = re.search(r"does not support \(domain, op_type, version\):\s*(.*)", message)
    if m:
        ops = re.findall(r"\(([^,]+), ([^,]+), (\d+)\)", m.group(1))
        return "no kernel yet for " + ", ".join(f"{d}.{o}-{v}" if d != "ai.onnx" else f"{o}-{v}" for d, o, v in ops)
    return "FIXME: " + message[:150]


def main(path):
    print("# ONNX backend cases that onyx is known to fail, one per line: case  # specific reason.")
    print("# `onyx conformance --expected` fails on a failure not listed here and on a listed")
    print("# case that passes, so this list only shrinks. Drafted by make_expected.py; reasons checked by hand.")
    for line in open(path):
        if not line.startswith("FAIL "):
            continue
        name, _, message = line[5:].partition(": ")
        print(f"{name}  # {reason_for(name, message.strip())}")


if __name__ == "__main__":
    main(sys.argv[1])
