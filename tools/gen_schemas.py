#!/usr/bin/env python3
"""Writes src/graph/schemas_generated.cc: every version of every ONNX op schema,
read from the installed `onnx` package, as plain C++ aggregate tables.

Usage:
    python tools/gen_schemas.py > src/graph/schemas_generated.cc
    python tools/gen_schemas.py src/graph/schemas_generated.cc

The output is committed, so building onyx needs no Python. Rerun this script
after upgrading the `onnx` package to pick up new ops and versions.
"""

import sys

import onnx
import onnx.defs

DOMAINS = ["", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"]

# onnx.defs attribute types -> onyx::graph::AttributeType enumerators.
ATTRIBUTE_TYPES = {
    "UNDEFINED": "kUndefined",
    "FLOAT": "kFloat",
    "INT": "kInt",
    "STRING": "kString",
    "TENSOR": "kTensor",
    "GRAPH": "kGraph",
    "SPARSE_TENSOR": "kSparseTensor",
    "TYPE_PROTO": "kTypeProto",
    "FLOATS": "kFloats",
    "INTS": "kInts",
    "STRINGS": "kStrings",
    "TENSORS": "kTensors",
    "GRAPHS": "kGraphs",
    "SPARSE_TENSORS": "kSparseTensors",
    "TYPE_PROTOS": "kTypeProtos",
}

PARAM_OPTIONS = {
    "Single": "kSingle",
    "Optional": "kOptional",
    "Variadic": "kVariadic",
}

INT_MAX = 2147483647


def c_string(data):
    """A C string literal for bytes or str; non-printable bytes as octal escapes."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    out = ['"']
    previous_was_octal = False
    for byte in data:
        ch = chr(byte)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
            previous_was_octal = False
        elif 32 <= byte < 127 and not (previous_was_octal and ch in "01234567") and ch != "?":
            # '?' is escaped to keep trigraph-like sequences out of the literal.
            out.append(ch)
            previous_was_octal = False
        else:
            out.append("\\%o" % byte if byte >= 0o100 else "\\%03o" % byte)
            previous_was_octal = True
    out.append('"')
    return "".join(out)


def c_float(value):
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        return {"inf": "INFINITY", "-inf": "-INFINITY", "nan": "NAN"}[text]
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def enum_name(value):
    # pybind enums print as "AttrType.INT" / "FormalParameterOption.Single".
    return str(value).split(".")[-1]


class Writer:
    def __init__(self):
        self.lines = []
        self.counter = 0
        self.string_lists = {}  # tuple of strings -> array name (deduplicated)
        self.arrays = {}  # (element type, body) -> array name: identical tables are emitted once

    def array(self, prefix, element_type, body):
        key = (element_type, body)
        if key not in self.arrays:
            array = self.name(prefix)
            self.lines.append("const %s %s[] = {%s};" % (element_type, array, body))
            self.arrays[key] = array
        return self.arrays[key]

    def name(self, prefix):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def string_list(self, items):
        key = tuple(items)
        if key not in self.string_lists:
            array = self.name("kStrings")
            body = ", ".join(c_string(item) for item in items)
            self.lines.append("const char* const %s[] = {%s};" % (array, body))
            self.string_lists[key] = array
        return self.string_lists[key]

    def params(self, params):
        if not params:
            return "nullptr", 0
        rows = []
        for p in params:
            rows.append("{%s, %s, ParamOption::%s, %s, %d}" % (
                c_string(p.name), c_string(p.type_str), PARAM_OPTIONS[enum_name(p.option)],
                "true" if p.is_homogeneous else "false", p.min_arity))
        return self.array("kParams", "FormalParam", ", ".join(rows)), len(params)

    def type_constraints(self, constraints):
        if not constraints:
            return "nullptr", 0
        rows = []
        for tc in constraints:
            allowed = list(tc.allowed_type_strs)
            allowed_array = self.string_list(allowed) if allowed else "nullptr"
            rows.append("{%s, %s, %d}" % (c_string(tc.type_param_str), allowed_array, len(allowed)))
        return self.array("kConstraints", "TypeConstraint", ", ".join(rows)), len(constraints)

    def attributes(self, attributes):
        if not attributes:
            return "nullptr", 0
        rows = []
        for attr in sorted(attributes.values(), key=lambda a: a.name):
            kind = enum_name(attr.type)
            dv = attr.default_value
            has_default = dv is not None and dv.type != 0
            default_int, default_float, default_string = "0", "0.0f", "nullptr"
            ints, ints_count, floats, floats_count, strings, strings_count = "nullptr", 0, "nullptr", 0, "nullptr", 0
            if has_default:
                if dv.type == onnx.AttributeProto.INT:
                    default_int = "INT64_C(%d)" % dv.i
                elif dv.type == onnx.AttributeProto.FLOAT:
                    default_float = c_float(dv.f)
                elif dv.type == onnx.AttributeProto.STRING:
                    default_string = c_string(dv.s)
                elif dv.type == onnx.AttributeProto.INTS:
                    ints = self.array("kInts", "int64_t",
                                      ", ".join("INT64_C(%d)" % v for v in dv.ints) or "0")
                    ints_count = len(dv.ints)
                elif dv.type == onnx.AttributeProto.FLOATS:
                    floats = self.array("kFloats", "float",
                                        ", ".join(c_float(v) for v in dv.floats) or "0.0f")
                    floats_count = len(dv.floats)
                elif dv.type == onnx.AttributeProto.STRINGS:
                    strings = self.string_list([s.decode("utf-8") for s in dv.strings])
                    strings_count = len(dv.strings)
                else:
                    # Tensor/graph defaults do not occur in the spec; record none.
                    has_default = False
            rows.append("{%s, AttributeType::%s, %s, %s, %s, %s, %s, %s, %d, %s, %d, %s, %d}" % (
                c_string(attr.name), ATTRIBUTE_TYPES[kind], "true" if attr.required else "false",
                "true" if has_default else "false", default_int, default_float, default_string,
                ints, ints_count, floats, floats_count, strings, strings_count))
        return self.array("kAttributes", "AttributeSchema", ", ".join(rows)), len(attributes)

    def functions(self, schema):
        """Static function bodies, one per opset they are written for.

        Context-dependent bodies are built by onnx from a concrete node (its
        attributes and input types), so there are no fixed bytes to emit.
        """
        context_dependent = set(schema.context_dependent_function_opset_versions)
        rows = []
        for opset in schema.all_function_opset_versions:
            if opset in context_dependent:
                continue
            data = schema.get_function_with_opset_version(opset)
            if not data:
                continue
            rows.append((opset, data))
        if not rows:
            return "nullptr", 0
        array = self.name("kFunctions")
        body = ", ".join("{%d, %s, %d}" % (opset, c_string(data), len(data)) for opset, data in rows)
        self.lines.append("const FunctionBody %s[] = {%s};" % (array, body))
        return array, len(rows)


def main():
    schemas = [s for s in onnx.defs.get_all_schemas_with_history() if s.domain in DOMAINS]
    schemas.sort(key=lambda s: (DOMAINS.index(s.domain), s.name, s.since_version))

    writer = Writer()
    rows = []
    for s in schemas:
        inputs, input_count = writer.params(list(s.inputs))
        outputs, output_count = writer.params(list(s.outputs))
        constraints, constraint_count = writer.type_constraints(list(s.type_constraints))
        attributes, attribute_count = writer.attributes(s.attributes)
        functions, function_count = writer.functions(s)
        max_inputs = min(s.max_input, INT_MAX)
        max_outputs = min(s.max_output, INT_MAX)
        rows.append(
            "    {%s, %s, %d, %s, %d, %d, %d, %d, %s, %d, %s, %d, %s, %d, %s, %d, %s, %d}," % (
                c_string(s.domain), c_string(s.name), s.since_version,
                "true" if s.deprecated else "false",
                s.min_input, max_inputs, s.min_output, max_outputs,
                inputs, input_count, outputs, output_count, constraints, constraint_count,
                attributes, attribute_count, functions, function_count))

    out = []
    out.append("// Generated by tools/gen_schemas.py from onnx %s (ai.onnx opset %d). Do not edit:"
               % (onnx.__version__, onnx.defs.onnx_opset_version()))
    out.append("// rerun the script instead. Every version of every op of the domains onyx knows.")
    out.append("// clang-format off")
    out.append("#include <cmath>")
    out.append("#include <cstdint>")
    out.append("")
    out.append('#include "graph/schema.h"')
    out.append("")
    out.append("namespace onyx::graph {")
    out.append("namespace {")
    out.append("")
    out.extend(writer.lines)
    out.append("")
    out.append("const OpSchema kSchemas[] = {")
    out.extend(rows)
    out.append("};")
    out.append("")
    out.append("}  // namespace")
    out.append("")
    out.append("const OpSchema* all_schemas(size_t* count) {")
    out.append("  *count = sizeof(kSchemas) / sizeof(kSchemas[0]);")
    out.append("  return kSchemas;")
    out.append("}")
    out.append("")
    out.append('const char* schema_onnx_version() { return "%s"; }' % onnx.__version__)
    out.append("")
    out.append("}  // namespace onyx::graph")
    text = "\n".join(out) + "\n"

    if len(sys.argv) > 1:
        with open(sys.argv[1], "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
