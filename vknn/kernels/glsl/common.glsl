// Helpers shared by VKNN kernels: NaN-propagating min/max and the special
// functions GLSL lacks or computes with poor relative accuracy near zero
// (Vulkan only bounds exp/log/tanh loosely; ONNX's oracle is exact f64).
#ifndef VKNN_COMMON_GLSL
#define VKNN_COMMON_GLSL

#define VKNN_NAN uintBitsToFloat(0x7fc00000u)

// GLSL min/max leave NaN operands undefined; numpy/ONNX propagate them.
float vknn_max(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : max(a, b); }
float vknn_min(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : min(a, b); }

// Numerically stable logistic: exp of a non-positive argument only.
float vknn_sigmoid(float x) {
    float e = exp(-abs(x));
    return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

// exp(x) - 1 without cancellation near 0 (Kahan's trick).
float vknn_expm1(float x) {
    if (abs(x) < 1e-5) return x + 0.5 * x * x;
    float u = exp(x);
    if (u == 1.0) return x;
    float um1 = u - 1.0;
    if (um1 == -1.0) return -1.0;
    if (isinf(u)) return u;
    return um1 * x / log(u);
}

// log(1 + x) without cancellation near 0 (Goldberg's trick).
float vknn_log1p(float x) {
    float u = 1.0 + x;
    if (u == 1.0) return x;
    if (isinf(u)) return log(u);
    return log(u) * x / (u - 1.0);
}

// tanh: the odd Taylor series below |x| = 0.5 (where 1 - e^{-2|x|} would
// cancel), 1 - 2/(e^{2|x|} + 1) above; saturates without inf/inf.
float vknn_tanh(float x) {
    float a = abs(x);
    float r;
    if (a < 0.5) {
        float z = a * a;
        r = a * (1.0 + z * (-0.33333333333 + z * (0.13333333333 + z * (-0.05396825397
            + z * (0.02186948854 + z * (-0.00886323552 + z * (0.00359212803
            + z * -0.00145583438)))))));
    } else {
        float t = exp(-2.0 * a);
        r = (1.0 - t) / (1.0 + t);
    }
    return x < 0.0 ? -r : r;
}

// erfc for z >= 0 by the Chebyshev-fitted exponential of Numerical Recipes
// (fractional error < 1.2e-7).
float vknn_erfc_pos(float z) {
    float t = 1.0 / (1.0 + 0.5 * z);
    float p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277))))))));
    return t * exp(p);
}

// erf: its Maclaurin series below |x| = 1 (terms fall below 2^-26 by
// n = 11), 1 - erfc above.
float vknn_erf(float x) {
    float a = abs(x);
    if (a < 1.0) {
        // sum_n (-1)^n x^(2n+1) / (n! (2n+1)), n = 0..11.
        float z = x * x;
        float term = 1.0;     // (-z)^n / n!
        float sum = 1.0;      // n = 0
        for (int n = 1; n <= 11; ++n) {
            term *= -z / float(n);
            sum += term / float(2 * n + 1);
        }
        return 1.1283791670955126 * x * sum;
    }
    float r = 1.0 - vknn_erfc_pos(a);
    return x < 0.0 ? -r : r;
}

float vknn_erfc(float x) {
    if (abs(x) < 1.0) return 1.0 - vknn_erf(x);
    return x > 0.0 ? vknn_erfc_pos(x) : 2.0 - vknn_erfc_pos(-x);
}

#endif  // VKNN_COMMON_GLSL
