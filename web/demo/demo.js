// The onyx-web demo: classify a dropped or picked image with digits_cnn.onnx.
// window.onyxDemo tells the browser tests (tests/python/test_web.py) what
// happened: {ready, variant, threads, input, top5, latencyMs, error}.
import * as ort from '../dist/onyx.js';

const statusText = document.getElementById('status');
const loadBar = document.getElementById('load');
window.onyxDemo = { ready: false };

// Fetches the model, showing its progress.
async function fetchWithProgress(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get('Content-Length')) || 0;
  const reader = response.body.getReader();
  const chunks = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.length;
    if (total) loadBar.value = received / total;
  }
  const bytes = new Uint8Array(received);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  loadBar.value = 1;
  return bytes;
}

// The image as the model's input: 8x8 gray levels, ink 1 and background 0
// (a light background is inverted), stretched to [0, 1].
function toInput(bitmap) {
  const canvas = document.getElementById('input');
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = 'high';
  ctx.fillStyle = 'white';
  ctx.fillRect(0, 0, 8, 8);
  // Centered, aspect kept.
  const scale = Math.min(8 / bitmap.width, 8 / bitmap.height);
  const w = bitmap.width * scale;
  const h = bitmap.height * scale;
  ctx.drawImage(bitmap, (8 - w) / 2, (8 - h) / 2, w, h);
  const rgba = ctx.getImageData(0, 0, 8, 8).data;
  const gray = new Float32Array(64);
  for (let i = 0; i < 64; ++i) gray[i] = (0.299 * rgba[4 * i] + 0.587 * rgba[4 * i + 1] + 0.114 * rgba[4 * i + 2]) / 255;
  const mean = gray.reduce((a, b) => a + b, 0) / 64;
  if (mean > 0.5) for (let i = 0; i < 64; ++i) gray[i] = 1 - gray[i];
  const min = Math.min(...gray);
  const max = Math.max(...gray);
  for (let i = 0; i < 64; ++i) gray[i] = max > min ? (gray[i] - min) / (max - min) : 0;
  // Show what the model sees (ink dark again).
  const shown = ctx.createImageData(8, 8);
  for (let i = 0; i < 64; ++i) {
    const v = Math.round(255 * (1 - gray[i]));
    shown.data.set([v, v, v, 255], 4 * i);
  }
  ctx.putImageData(shown, 0, 0);
  return gray;
}

function showTop5(probabilities) {
  const ranked = Array.from(probabilities, (p, label) => ({ label, probability: p }))
    .sort((a, b) => b.probability - a.probability).slice(0, 5);
  const table = document.getElementById('top5');
  table.innerHTML = '';
  for (const { label, probability } of ranked) {
    const row = table.insertRow();
    row.insertCell().textContent = String(label);
    const bar = row.insertCell();
    bar.className = 'bar';
    const fill = document.createElement('span');
    fill.style.width = `${(100 * probability).toFixed(1)}%`;
    bar.appendChild(fill);
    row.insertCell().textContent = `${(100 * probability).toFixed(2)}%`;
  }
  return ranked;
}

async function main() {
  const session = await ort.InferenceSession.create(await fetchWithProgress('digits_cnn.onnx'));
  const { variant, threads } = session.backend;
  statusText.textContent = `ready (${variant}, ${threads} thread${threads > 1 ? 's' : ''})`;
  window.onyxDemo = { ready: true, variant, threads };

  async function classify(blob) {
    try {
      const input = toInput(await createImageBitmap(blob));
      const feeds = { x: new ort.Tensor('float32', input, [1, 1, 8, 8]) };
      await session.run(feeds);  // warm-up
      const times = [];
      let output;
      for (let i = 0; i < 10; ++i) {
        const start = performance.now();
        output = await session.run(feeds);
        times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      const latencyMs = times[times.length >> 1];
      const top5 = showTop5(output.probabilities.data);
      document.getElementById('latency').textContent = `latency ${latencyMs.toFixed(3)} ms (median of 10 runs)`;
      document.getElementById('result').hidden = false;
      window.onyxDemo = { ...window.onyxDemo, input: Array.from(input), top5, latencyMs, error: undefined };
    } catch (e) {
      statusText.textContent = e.message;
      statusText.className = 'error';
      window.onyxDemo = { ...window.onyxDemo, error: e.message };
    }
  }

  document.getElementById('file').addEventListener('change', (e) => {
    if (e.target.files.length) classify(e.target.files[0]);
  });
  const drop = document.getElementById('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    if (e.dataTransfer.files.length) classify(e.dataTransfer.files[0]);
  });
  const samples = document.getElementById('samples');
  for (let label = 0; label < 10; ++label) {
    const link = document.createElement('a');
    link.href = '#';
    link.textContent = String(label);
    link.style.marginRight = '0.6em';
    link.addEventListener('click', async (e) => {
      e.preventDefault();
      classify(await (await fetch(`samples/digit_${label}.png`)).blob());
    });
    samples.appendChild(link);
  }
}

main().catch((e) => {
  statusText.textContent = `could not start: ${e.message}`;
  statusText.className = 'error';
  window.onyxDemo = { ready: false, error: e.message };
});
