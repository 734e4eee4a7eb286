#!/usr/bin/env bash
# Fails when a file includes a layer above its own (docs/architecture.md,
# "Layers"). Each src/ folder may include the public API (onyx/) and the
# folders listed for it; nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed=(
  [common]="common"
  [tensor]="tensor common"
  [model]="model tensor common"
  [graph]="graph model tensor common"
  [training]="training graph model tensor common"
  [optimizer]="optimizer graph model tensor common"
  [providers]="providers optimizer training graph model tensor common"
  [session]="session providers optimizer training graph model tensor common"
  [training_api]="training_api session providers optimizer training graph model tensor common"
  [genai]="genai session providers optimizer training graph model tensor common"
  [capi]="capi genai training_api session providers optimizer training graph model tensor common"
)
status=0
for layer in "${!allowed[@]}"; do
  [ -d "src/$layer" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -n 's/.*#include "\([a-z_]*\)\/.*/\1/p' <<<"$line")
    [ -z "$target" ] && continue
    [ "$target" = onyx ] && continue
    if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
      echo "layering: $file (src/$layer) includes src/$target/, which is above it: ${line#*:}"
      status=1
    fi
  done < <(grep -rn '#include "[a-z_]*/' "src/$layer" --include='*.h' --include='*.cc' || true)
done
# include/onyx/ is the public API: it includes nothing of src/.
if grep -rn '#include "' include/onyx | grep -v '#include "onyx/'; then
  echo "layering: a public header under include/onyx/ includes something outside it"
  status=1
fi
# Language bindings see onyx through its C API alone: onyx/onyx_c_api.h and
# their own headers, nothing of src/ nor the C++ API.
if grep -rn '#include "' java/native 2>/dev/null | grep -v -e '#include "onyx/onyx_c_api.h"' -e '#include "[A-Za-z_]*\.h"'; then
  echo "layering: a binding's native code includes more of onyx than include/onyx/onyx_c_api.h"
  status=1
fi
# The Node.js addon goes through the C API alone.
if [ -d node/src ] && grep -rn '#include "' node/src | grep -v '#include "onyx/onyx_c_api.h"'; then
  echo "layering: node/src includes something of onyx other than its C API (onyx/onyx_c_api.h)"
  status=1
fi
# So does the Python extension, but for its test-only hooks (testing_hooks.cc).
if grep -rn '#include "' python/src --include='*.cc' --include='*.h' | grep -v -e '^python/src/testing_hooks.cc:' |
  grep -v -e '#include "onyx/onyx_c_api.h"' -e '#include "onyx/onyx_genai_c.h"'; then
  echo "layering: python/src includes something of onyx other than its C APIs (onyx/onyx_c_api.h, onyx/onyx_genai_c.h)"
  status=1
fi
# The server (serving/) is an application over the public C++ API: onyx/
# headers and its own, nothing of src/.
if [ -d serving ] && grep -rn '#include "' serving | grep -v -e '#include "onyx/' -e '#include "[a-z_]*\.h"'; then
  echo "layering: serving/ includes something of onyx other than its public API (include/onyx/)"
  status=1
fi
# The WebAssembly module's boundary (web/src/) is over the public C++ API,
# plus the model reader for decoding test data (decodeProto) and the JSON
# writer; no kernels, sessions or graphs of the core's insides.
if [ -d web/src ] && grep -rn '#include "' web/src |
    grep -v -e '#include "onyx/' -e '#include "model/' -e '#include "common/json.h"'; then
  echo "layering: web/src includes more of onyx than its public API, model/ and common/json.h"
  status=1
fi
[ "$status" -eq 0 ] && echo "layering: every include points down the layers"
exit "$status"
