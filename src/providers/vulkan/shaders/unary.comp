#version 450
#extension GL_GOOGLE_include_directive : require
// y = f(x), element by element; alpha and beta are the op's attributes.
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  float alpha;
  float beta;
} p;

// erf by Abramowitz and Stegun 7.1.26 refined: |error| < 1.2e-7.
float erf_approx(float v) {
  const float z = abs(v);
  const float t = 1.0 / (1.0 + 0.5 * z);
  const float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
                  t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
                  t * (-0.82215223 + t * 0.17087277)))))))));
  return v >= 0.0 ? 1.0 - r : r - 1.0;
}

float sigmoid(float v) {
  if (v >= 0.0) return 1.0 / (1.0 + exp(-v));
  const float e = exp(v);
  return e / (1.0 + e);
}

// tanh through exp(-2|v|), and near 0 (where 1 - exp cancels) its series:
// below 1/8 the first omitted term is under 2e-10 of v.
float tanh_stable(float v) {
  const float z = abs(v);
  float r;
  if (z < 0.125) {
    const float z2 = z * z;
    r = z * (1.0 + z2 * (-1.0 / 3.0 + z2 * (2.0 / 15.0 - z2 * (17.0 / 315.0))));
  } else {
    const float t = exp(-2.0 * z);
    r = (1.0 - t) / (1.0 + t);
  }
  return v < 0.0 ? -r : r;
}

// log(1 + u) without losing u when it is small next to 1.
float log1p_accurate(float u) {
  const float w = 1.0 + u;
  return w == 1.0 ? u : log(w) * (u / (w - 1.0));
}

float softplus(float v) { return v > 0.0 ? v + log1p_accurate(exp(-v)) : log1p_accurate(exp(v)); }

float apply(float v) {
  switch (OP) {
    case 0: return abs(v);                                    // Abs
    case 1: return -v;                                        // Neg
    case 2: return v > 0.0 ? v : 0.0;                         // Relu
    case 3: return sigmoid(v);                                // Sigmoid
    case 4: return tanh_stable(v);                            // Tanh
    case 5: return exp(v);                                    // Exp
    case 6: return log(v);                                    // Log
    case 7: return sqrt(v);                                   // Sqrt
    case 8: return 1.0 / v;                                   // Reciprocal
    case 9: return floor(v);                                  // Floor
    case 10: return ceil(v);                                  // Ceil
    case 11: return roundEven(v);                             // Round
    case 12: return sign(v);                                  // Sign
    case 13: return erf_approx(v);                            // Erf
    case 14: return sin(v);                                   // Sin
    case 15: return cos(v);                                   // Cos
    case 16: return tan(v);                                   // Tan
    case 17: return atan(v, sqrt((1.0 - v) * (1.0 + v)));    // Asin (through atan: asin itself is coarse on some drivers)
    case 18: return atan(sqrt((1.0 - v) * (1.0 + v)), v);    // Acos
    case 19: return atan(v);                                  // Atan
    case 20: return 0.5 * (exp(v) - exp(-v));                 // Sinh
    case 21: return 0.5 * (exp(v) + exp(-v));                 // Cosh
    case 22: return log(v + sqrt(v * v + 1.0));               // Asinh
    case 23: return log(v + sqrt(v * v - 1.0));               // Acosh
    case 24: return 0.5 * log((1.0 + v) / (1.0 - v));         // Atanh
    case 25: return softplus(v);                              // Softplus
    case 26: return v / (1.0 + abs(v));                       // Softsign
    case 27: return v >= 0.0 ? v : p.alpha * (exp(v) - 1.0);  // Elu
    case 28: return p.beta * (v > 0.0 ? v : p.alpha * (exp(v) - 1.0));  // Selu (beta = gamma)
    case 29: return v >= 0.0 ? v : p.alpha * v;               // LeakyRelu
    // clamp of a NaN is undefined in GLSL: NaN in, NaN out, as on the CPU.
    case 30: return isnan(v) ? v : clamp(p.alpha * v + p.beta, 0.0, 1.0);          // HardSigmoid
    case 31: return isnan(v) ? v : v * clamp(v / 6.0 + 0.5, 0.0, 1.0);             // HardSwish
    case 32: return v > p.alpha ? v : 0.0;                    // ThresholdedRelu
    case 33: return max(0.0, v) + min(0.0, p.alpha * (exp(v / p.alpha) - 1.0));  // Celu
    case 34: return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752));       // Gelu
    case 35: return 0.5 * v * (1.0 + tanh_stable(0.79788456080286536 * (v + 0.044715 * v * v * v)));  // Gelu tanh
    case 36: return v * tanh_stable(softplus(v));             // Mish
    case 37: return isnan(v) ? v : min(max(v, p.alpha), p.beta);  // Clip
    case 38: return v * sigmoid(p.alpha * v);                 // Swish (x * sigmoid(alpha x))
    default: return v;                                        // Identity
  }
}

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  y[i] = apply(x[i]);
}
