"""onyx for the web (web/, built by scripts/build_web.sh into web/dist/):
the JavaScript API's tests under Node.js, the ONNX backend node cases under
Node.js and in headless Chromium against native onyx's results, and the
demo page in Chromium beside native onyx.

The node cases are gated as native conformance is: every case native onyx
passes (all but tests/conformance/expected_failures.txt) must pass in the
browser too, except those tests/conformance/expected_failures_web.txt lists
with a reason; a listed case that passes fails too, so the list only shrinks.
ONYX_WEB_EVERY=N runs one node case in N in Chromium (CI runs them all)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from bindings_util import ROOT, build_dir

import onyx

WEB = ROOT / "web"
DIST = WEB / "dist"
DATA = Path(os.environ.get("ONYX_BACKEND_DATA", ROOT.parent / "shared" / "onnx-backend-data"))
NODE = shutil.which("node") or shutil.which("nodejs")
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

sys.path.insert(0, str(WEB))
import serve  # noqa: E402 - web/serve.py


def require_dist() -> None:
    for variant in ("simd-threaded", "plain"):
        if not (DIST / "wasm" / f"onyx-{variant}.wasm").is_file():
            pytest.skip(f"web/dist has no {variant} build: run scripts/build_web.sh (needs apt's emscripten)")


def require_data() -> None:
    if not (DATA / "node").is_dir():
        pytest.skip(f"no ONNX backend data at {DATA} (set ONYX_BACKEND_DATA)")


def listed(path: Path) -> dict[str, str]:
    cases = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition("#")
            cases[name.strip()] = reason.strip()
    return cases


def gate(results: dict[str, str]) -> None:
    """Fails on a case native onyx passes that failed here, unless listed in
    expected_failures_web.txt, and on a listed case that passed."""
    native_failures = listed(ROOT / "tests" / "conformance" / "expected_failures.txt")
    web_failures = listed(ROOT / "tests" / "conformance" / "expected_failures_web.txt")
    native_passes = [name for name in results if name not in native_failures]
    passed = [name for name in native_passes if not results[name]]
    new = {name: results[name] for name in native_passes if results[name] and name not in web_failures}
    fixed = [name for name in web_failures if name in results and not results[name]]
    rate = len(passed) / max(1, len(native_passes))
    print(f"{len(passed)} of the {len(native_passes)} node cases native onyx passes pass here ({rate:.1%})")
    assert not new, "new failures:\n" + "\n".join(f"{n}: {r}" for n, r in sorted(new.items()))
    assert not fixed, f"listed in expected_failures_web.txt but passing (take them off): {fixed}"
    assert rate >= 0.95


def run_node(*args: str, timeout: float = 900, **env) -> subprocess.CompletedProcess:
    if NODE is None:
        pytest.skip("node is not installed (scripts/setup.sh installs nodejs)")
    folder = build_dir()
    environment = {**os.environ, "ONYX_BACKEND_DATA": str(DATA), **env}
    if folder is not None:
        environment["ONYX_NODE_PACKAGE"] = str(folder / "node" / "onyx")
    return subprocess.run([NODE, *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=timeout)


def test_node_api():
    """web/tests/node/api.test.mjs under node's test runner: the API's shapes,
    both builds, errors, and tiny_cnn beside the native Node.js addon."""
    require_dist()
    done = run_node("--test", "web/tests/node/")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout
    assert "# skipped 0" in done.stdout or not (DATA / "node").is_dir(), done.stdout


def test_typescript_declarations():
    """web/tests/types.ts, written as a page for onnxruntime-web would use the
    API, type-checks against onyx.d.ts (Debian's node-typescript)."""
    tsc = shutil.which("tsc")
    if tsc is None:
        pytest.skip("tsc is not installed (scripts/setup.sh installs node-typescript)")
    done = subprocess.run([tsc, "--noEmit", "--strict", "--target", "es2020", "--module", "es2020",
                           "--moduleResolution", "node", "types.ts"], cwd=WEB / "tests", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("variant", ["simd-threaded", "plain"])
def test_node_cases_under_node(tmp_path, variant):
    """Every node case through each build in Node.js, gated as in Chromium."""
    require_dist()
    require_data()
    report = tmp_path / "results.json"
    args = ["--plain"] if variant == "plain" else []
    done = run_node("web/tests/node/conformance.mjs", str(DATA), "--json", str(report), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"({variant})" in done.stdout, done.stdout[-500:]
    gate(json.loads(report.read_text()))


# ---------------------------------------------------------------------------
# Headless Chromium.


@pytest.fixture(scope="module")
def chromium():
    require_dist()
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup.sh installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (scripts/setup.sh)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def server():
    data = DATA if (DATA / "node").is_dir() else None
    s = serve.start_in_thread(data=data)
    yield f"http://127.0.0.1:{s.server_address[1]}"
    s.shutdown()


def wait_for(driver, expression: str, timeout: float):
    """Polls a JavaScript expression until it is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(f"return {expression};")
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"{expression} was still false after {timeout} s; page status: "
                         + str(driver.execute_script("return document.body.innerText;"))[:2000])


def test_node_cases_in_chromium(chromium, server):
    require_data()
    every = int(os.environ.get("ONYX_WEB_EVERY", "1"))
    chromium.get(f"{server}/tests/conformance.html?every={every}")
    state = wait_for(chromium, "window.onyxConformance && window.onyxConformance.done && window.onyxConformance",
                     timeout=1800)
    assert "error" not in state, state.get("error")
    # The page is cross-origin isolated (serve.py's headers), so the threaded SIMD build ran.
    assert state["loaded"]["variant"] == "simd-threaded"
    gate(state["results"])


def top5_native(model: Path, x: np.ndarray) -> list[tuple[int, float]]:
    session = onyx.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    probabilities = session.run(None, {"x": x})[0][0]
    order = np.argsort(-probabilities, kind="stable")[:5]
    return [(int(i), float(probabilities[i])) for i in order]


def test_demo_classifies_like_native_onyx(chromium, server):
    chromium.get(f"{server}/demo/")
    state = wait_for(chromium, "window.onyxDemo && (window.onyxDemo.ready || window.onyxDemo.error) && window.onyxDemo",
                     timeout=120)
    assert state["ready"], state.get("error")
    assert state["variant"] == "simd-threaded"
    assert chromium.execute_script("return document.getElementById('load').value") == 1
    file_input = chromium.find_element("id", "file")
    for label in (0, 3, 7, 9):
        chromium.execute_script("window.onyxDemo.top5 = undefined;")
        file_input.send_keys(str(WEB / "demo" / "samples" / f"digit_{label}.png"))
        result = wait_for(chromium, "window.onyxDemo.top5 && window.onyxDemo", timeout=60)
        x = np.asarray(result["input"], np.float32).reshape(1, 1, 8, 8)
        want = top5_native(WEB / "demo" / "digits_cnn.onnx", x)
        got = [(entry["label"], entry["probability"]) for entry in result["top5"]]
        assert [g[0] for g in got] == [w[0] for w in want]
        np.testing.assert_allclose([g[1] for g in got], [w[1] for w in want], rtol=1e-4, atol=1e-6)
        assert got[0][0] == label, f"sample {label} classified as {got[0][0]}"
        assert result["latencyMs"] > 0
        rows = chromium.find_element("id", "top5").find_elements("tag name", "tr")
        assert len(rows) == 5 and rows[0].text.startswith(str(label)), [r.text for r in rows]


def test_without_isolation_one_thread_and_a_warning(chromium):
    """A page that is not cross-origin isolated has no SharedArrayBuffer: the
    plain build runs, and asking for threads warns on the console."""
    s = serve.start_in_thread(data=DATA if (DATA / "node").is_dir() else None, isolation=False)
    try:
        chromium.get_log("browser")  # drop earlier entries
        chromium.get(f"http://127.0.0.1:{s.server_address[1]}/demo/")
        state = wait_for(chromium, "window.onyxDemo && (window.onyxDemo.ready || window.onyxDemo.error) && window.onyxDemo",
                         timeout=120)
        assert state["ready"], state.get("error")
        assert state["variant"] == "plain"
        assert state["threads"] == 1
        # Asking for threads where there are none: a console warning saying why.
        backend = chromium.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import('/dist/onyx.js').then(async (ort) => {
              const s = await ort.InferenceSession.create('/demo/digits_cnn.onnx', { intraOpNumThreads: 2 });
              done(s.backend);
            }).catch((e) => done(String(e)));
        """)
        assert backend == {"variant": "plain", "threads": 1}, backend
        logs = [entry["message"] for entry in chromium.get_log("browser")]
        assert any("cross-origin isolated" in m for m in logs), logs
    finally:
        s.shutdown()


def test_errors_reach_the_page_as_rejections(chromium, server):
    chromium.get(f"{server}/demo/")
    wait_for(chromium, "window.onyxDemo && window.onyxDemo.ready", timeout=120)
    message = chromium.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/dist/onyx.js').then(async (ort) => {
          const s = await ort.InferenceSession.create('/demo/digits_cnn.onnx');
          try {
            await s.run({ x: new ort.Tensor('float32', new Float32Array(10), [1, 10]) });
            done('no error');
          } catch (e) { done(e.message); }
        });
    """)
    assert "x" in message and "no error" not in message


def test_tensor_from_image_and_back(chromium, server):
    """Tensor.fromImage and toImageData as onnxruntime-web defines them:
    (pixel + bias) / mean per channel, RGB/BGR/RGBA, NCHW/NHWC, resizing."""
    chromium.get(f"{server}/demo/")
    wait_for(chromium, "window.onyxDemo && window.onyxDemo.ready", timeout=120)
    got = chromium.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/dist/onyx.js').then(async (ort) => {
          const image = new ImageData(3, 2);  // 2 rows of 3 pixels
          for (let i = 0; i < 24; ++i) image.data[i] = (i * 37) % 256;
          for (let i = 3; i < 24; i += 4) image.data[i] = 255;
          const plain = await ort.Tensor.fromImage(image);
          const bgr = await ort.Tensor.fromImage(image, { tensorFormat: 'BGR', tensorLayout: 'NHWC',
                                                          norm: { mean: [2, 4, 8], bias: -1 } });
          const bytes = await ort.Tensor.fromImage(image, { dataType: 'uint8', tensorFormat: 'RGBA' });
          const resized = await ort.Tensor.fromImage(image, { resizedWidth: 6, resizedHeight: 4 });
          const back = plain.toImageData();
          done({ pixels: Array.from(image.data), plain: [Array.from(plain.data), plain.dims],
                 bgr: [Array.from(bgr.data), bgr.dims], bytes: [Array.from(bytes.data), bytes.dims, bytes.type],
                 resized: resized.dims, back: Array.from(back.data) });
        }).catch((e) => done({ error: String(e) }));
    """)
    assert "error" not in got, got.get("error")
    rgba = np.asarray(got["pixels"], np.float64).reshape(2, 3, 4)
    np.testing.assert_allclose(got["plain"][0], (rgba[..., :3] / 255).transpose(2, 0, 1).ravel(), rtol=1e-6)
    assert got["plain"][1] == [1, 3, 2, 3]
    want_bgr = (rgba[..., [2, 1, 0]] - 1) / np.array([2, 4, 8])
    np.testing.assert_allclose(got["bgr"][0], want_bgr.ravel(), rtol=1e-6)
    assert got["bgr"][1] == [1, 2, 3, 3]
    assert got["bytes"][2] == "uint8" and got["bytes"][1] == [1, 4, 2, 3]
    assert got["bytes"][0] == list(rgba.transpose(2, 0, 1).astype(int).ravel())
    assert got["resized"] == [1, 3, 4, 6]
    np.testing.assert_allclose(got["back"], got["pixels"], atol=1)
