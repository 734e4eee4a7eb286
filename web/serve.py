"""A small local server for onyx-web's demo and browser tests.

    python3 web/serve.py [--port 8000] [--data DIR] [--no-isolation]

Serves web/ (the demo at /demo/, the package at /dist/, the browser tests at
/tests/) with the headers that make a page cross-origin isolated
(Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy:
require-corp), without which browsers give no SharedArrayBuffer and so no
threads. --no-isolation leaves them out (onyx-web then falls back to one
thread and warns). --data DIR also serves the ONNX backend suite at /data/
and its node cases as /cases.json; --models DIR a folder of models at
/models/ (the benchmark's).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import sys
import threading
import urllib.parse
from pathlib import Path

WEB = Path(__file__).resolve().parent

MIME = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".onnx": "application/octet-stream",
    ".pb": "application/octet-stream",
}


def node_cases(data: Path) -> list[dict]:
    """The node cases under data/node: model and test data sets, as paths below /data/."""
    cases = []
    node = data / "node"
    for case in sorted(p for p in node.iterdir() if (p / "model.onnx").is_file()):
        sets = []
        for s in sorted(p for p in case.iterdir() if p.name.startswith("test_data_set_")):
            def numbered(prefix: str) -> list[str]:
                files = sorted(s.glob(prefix + "*.pb"), key=lambda f: int(f.stem[len(prefix):]))
                return [f"/data/node/{case.name}/{s.name}/{f.name}" for f in files]
            sets.append({"inputs": numbered("input_"), "outputs": numbered("output_")})
        cases.append({"name": case.name, "model": f"/data/node/{case.name}/model.onnx", "sets": sets})
    return cases


class Handler(http.server.SimpleHTTPRequestHandler):
    isolation = True
    mounts: dict[str, Path] = {}  # URL prefix ("/data/") -> folder
    cases_json: bytes | None = None

    def end_headers(self) -> None:
        if self.isolation:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def guess_type(self, path):  # noqa: ANN001 - the base class's signature
        return MIME.get(os.path.splitext(str(path))[1], super().guess_type(path))

    def translate_path(self, path: str) -> str:
        parsed = urllib.parse.urlparse(path).path
        for prefix, folder in self.mounts.items():
            if parsed.startswith(prefix):
                target = (folder / urllib.parse.unquote(parsed[len(prefix):])).resolve()
                # Nothing outside the folder.
                return str(target) if folder.resolve() in target.parents else str(folder / "missing")
        return super().translate_path(path)

    def do_GET(self) -> None:
        if urllib.parse.urlparse(self.path).path == "/cases.json" and self.cases_json is not None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(self.cases_json)))
            self.end_headers()
            self.wfile.write(self.cases_json)
            return
        super().do_GET()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        if os.environ.get("ONYX_WEB_SERVER_LOG"):
            super().log_message(format, *args)


def make_server(port: int = 0, data: Path | None = None, isolation: bool = True,
                models: Path | None = None) -> http.server.ThreadingHTTPServer:
    """A server on 127.0.0.1 (port 0: any free one); serve_forever() it in a
    thread. `data`: the backend suite at /data/; `models`: a folder at /models/."""
    mounts = {}
    if data is not None:
        mounts["/data/"] = data
    if models is not None:
        mounts["/models/"] = models
    attrs = {"isolation": isolation, "mounts": mounts}
    if data is not None:
        attrs["cases_json"] = json.dumps(node_cases(data)).encode()
    handler = type("OnyxWebHandler", (Handler,), attrs)
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(WEB)))


def start_in_thread(**kwargs) -> http.server.ThreadingHTTPServer:
    server = make_server(**kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--data", type=Path, help="the ONNX backend suite (served at /data/, cases at /cases.json)")
    parser.add_argument("--models", type=Path, help="a folder of models, served at /models/")
    parser.add_argument("--no-isolation", action="store_true", help="leave out COOP/COEP (no threads)")
    args = parser.parse_args()
    if not (WEB / "dist" / "onyx.js").is_file():
        print("web/dist is missing: run scripts/build_web.sh first", file=sys.stderr)
        return 1
    server = make_server(args.port, args.data, not args.no_isolation, args.models)
    print(f"onyx-web: http://127.0.0.1:{server.server_address[1]}/demo/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
