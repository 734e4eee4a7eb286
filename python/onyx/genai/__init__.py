"""Text generation with onnxruntime-genai's API shape (work in progress)."""
