/* The edgevoice echo canceller's per-block arithmetic, compiled.
 *
 * audio/aec/numpy_kernel.py holds the reference implementation in numpy, call for call
 * (audio/aec/engine.py calls one or the other); at 161 bins numpy's per-call cost, not
 * the arithmetic, is what a block costs there (~80 calls). These
 * functions do the same maths in a handful of calls, on the engine's own arrays through
 * the buffer protocol (no copies, no allocation). The FFTs stay with numpy's pocketfft.
 *
 * Single precision like the numpy path (float32 / complex64 stored as float pairs),
 * element-wise operations in the same order; only the sums (over partitions and bins)
 * are accumulated in another order, so results agree with numpy to float32 rounding,
 * not bit for bit. Build with -ffp-contract=off so that no multiply-add is fused
 * (aarch64 would otherwise do so and drift further from the numpy path).
 *
 * The arrays must be C-contiguous and of the dtype each function names; sizes are
 * checked in bytes (a wrong size raises ValueError), dtypes are the caller's contract.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_BUFS 16

typedef struct {
    Py_buffer views[MAX_BUFS];
    int count;
} Buffers;

static void release_all(Buffers *bufs) {
    for (int i = 0; i < bufs->count; i++) {
        PyBuffer_Release(&bufs->views[i]);
    }
    bufs->count = 0;
}

/* A C-contiguous buffer of exactly nbytes (or, with nbytes < 0, a multiple of -nbytes). */
static void *get_buffer(Buffers *bufs, PyObject *obj, int writable, Py_ssize_t nbytes,
                        const char *name, Py_ssize_t *len_out) {
    Py_buffer *view = &bufs->views[bufs->count];
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        return NULL;
    }
    bufs->count++;
    if ((nbytes >= 0 && view->len != nbytes) ||
        (nbytes < 0 && (view->len == 0 || view->len % (-nbytes) != 0))) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %s%zd", name, view->len,
                     nbytes < 0 ? "a multiple of " : "", nbytes < 0 ? -nbytes : nbytes);
        return NULL;
    }
    if (len_out != NULL) {
        *len_out = view->len;
    }
    return view->buf;
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *name) {
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, nargs);
        return -1;
    }
    return 0;
}

/* estimate(W, Ws, X, wx, p0) -> float
 *
 * W (k, F) and Ws (ks, F) complex64 filters, X (k, F) complex64 reference spectra
 * (newest first). Writes both filters' echo spectra, wx[0] = sum_k W[k] X[k] and
 * wx[1] = sum_{k < ks} Ws[k] X[k] (wx: (2, F) complex64), and the newest row's power
 * p0 = |X[0]|^2 (F float32); returns the sum of p0. */
static PyObject *kernel_estimate(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t p0_len, w_len, ws_len;
    if (check_nargs(nargs, 5, "estimate") < 0) {
        return NULL;
    }
    float *p0 = get_buffer(&bufs, args[4], 1, -(Py_ssize_t)sizeof(float), "p0", &p0_len);
    if (p0 == NULL) goto fail;
    const Py_ssize_t nf = p0_len / (Py_ssize_t)sizeof(float);
    const Py_ssize_t row = 2 * nf * (Py_ssize_t)sizeof(float);
    const float *w = get_buffer(&bufs, args[0], 0, -row, "W", &w_len);
    if (w == NULL) goto fail;
    const Py_ssize_t k = w_len / row;
    const float *ws = get_buffer(&bufs, args[1], 0, -row, "Ws", &ws_len);
    if (ws == NULL) goto fail;
    const Py_ssize_t ks = ws_len / row;
    const float *x = get_buffer(&bufs, args[2], 0, k * row, "X", NULL);
    if (x == NULL) goto fail;
    float *wx = get_buffer(&bufs, args[3], 1, 2 * row, "wx", NULL);
    if (wx == NULL) goto fail;
    if (ks > k) {
        PyErr_SetString(PyExc_ValueError, "Ws has more partitions than W");
        goto fail;
    }
    double total = 0.0;
    for (Py_ssize_t f = 0; f < nf; f++) {
        const float xr = x[2 * f], xi = x[2 * f + 1];
        const float p = xr * xr + xi * xi;
        p0[f] = p;
        total += p;
    }
    for (int which = 0; which < 2; which++) {
        const float *filt = which == 0 ? w : ws;
        const Py_ssize_t parts = which == 0 ? k : ks;
        float *acc = wx + which * 2 * nf;
        memset(acc, 0, (size_t)row);
        for (Py_ssize_t j = 0; j < parts; j++) {
            const float *a = filt + j * 2 * nf;
            const float *b = x + j * 2 * nf;
            for (Py_ssize_t f = 0; f < nf; f++) {
                const float ar = a[2 * f], ai = a[2 * f + 1], br = b[2 * f], bi = b[2 * f + 1];
                acc[2 * f] += ar * br - ai * bi;
                acc[2 * f + 1] += ar * bi + ai * br;
            }
        }
    }
    release_all(&bufs);
    return PyFloat_FromDouble(total);
fail:
    release_all(&bufs);
    return NULL;
}

/* errors(d, echo, fft_in) -> (e_energy, es_energy, d_energy)
 *
 * d (N) float64: the mic; echo (2, 2N) float32: both filters' echo frames (the second
 * halves are the estimates); fft_in (3, 2N) float32: the errors d - echo go into the
 * second halves of rows 0 (main) and 2 (shadow). Returns their energies and the mic's. */
static PyObject *kernel_errors(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t d_len;
    if (check_nargs(nargs, 3, "errors") < 0) {
        return NULL;
    }
    const double *d = get_buffer(&bufs, args[0], 0, -(Py_ssize_t)sizeof(double), "d", &d_len);
    if (d == NULL) goto fail;
    const Py_ssize_t n = d_len / (Py_ssize_t)sizeof(double);
    const float *echo = get_buffer(&bufs, args[1], 0, 4 * n * (Py_ssize_t)sizeof(float), "echo", NULL);
    if (echo == NULL) goto fail;
    float *fft_in = get_buffer(&bufs, args[2], 1, 6 * n * (Py_ssize_t)sizeof(float), "fft_in", NULL);
    if (fft_in == NULL) goto fail;
    float *e = fft_in + n;
    float *es = fft_in + 5 * n;
    const float *y = echo + n;
    const float *ys = echo + 3 * n;
    float e_energy = 0.0f, es_energy = 0.0f;
    double d_energy = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const float a = (float)(d[i] - (double)y[i]);
        const float b = (float)(d[i] - (double)ys[i]);
        e[i] = a;
        es[i] = b;
        e_energy += a * a;
        es_energy += b * b;
        d_energy += d[i] * d[i];
    }
    release_all(&bufs);
    return Py_BuildValue("(ddd)", (double)e_energy, (double)es_energy, d_energy);
fail:
    release_all(&bufs);
    return NULL;
}

/* frame(frame, fft_in, window, row)
 *
 * The suppressor's analysis frame (2N float32) slides by one period and takes fft_in's
 * error row `row` (0: main, 2: shadow, second half); fft_in[1] = frame * window. */
static PyObject *kernel_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t m_len;
    if (check_nargs(nargs, 4, "frame") < 0) {
        return NULL;
    }
    float *frame = get_buffer(&bufs, args[0], 1, -2 * (Py_ssize_t)sizeof(float), "frame", &m_len);
    if (frame == NULL) goto fail;
    const Py_ssize_t m = m_len / (Py_ssize_t)sizeof(float);
    const Py_ssize_t n = m / 2;
    float *fft_in = get_buffer(&bufs, args[1], 1, 3 * m_len, "fft_in", NULL);
    if (fft_in == NULL) goto fail;
    const float *window = get_buffer(&bufs, args[2], 0, m_len, "window", NULL);
    if (window == NULL) goto fail;
    const long row = PyLong_AsLong(args[3]);
    if (row == -1 && PyErr_Occurred()) goto fail;
    if (row != 0 && row != 2) {
        PyErr_SetString(PyExc_ValueError, "row must be 0 or 2");
        goto fail;
    }
    memmove(frame, frame + n, (size_t)n * sizeof(float));
    memcpy(frame + n, fft_in + row * m + n, (size_t)n * sizeof(float));
    float *out = fft_in + m;
    for (Py_ssize_t i = 0; i < m; i++) {
        out[i] = frame[i] * window[i];
    }
    release_all(&bufs);
    Py_RETURN_NONE;
fail:
    release_all(&bufs);
    return NULL;
}

typedef struct {
    float over, over_talk, talk_ratio, floor;
} GainParams;

/* The residual-echo suppressor's gain per bin (numpy_kernel._gain): r_s released like
 * the room and held above residual_lin (+ residual_nl, the loudspeaker's distortion, when
 * not NULL), the error max(pe, pe_s), a Wiener-style gain with the overestimate, floored.
 * Returns 1 while someone talks (error >> residual). */
static int suppressor_gain(Py_ssize_t nf, const float *pe, const float *pe_s, const float *residual_lin,
                           const float *residual_nl, float *r_s, float *error, float *gain,
                           const GainParams *gp) {
    float sum_r = 0.0f, sum_e = 0.0f;
    for (Py_ssize_t f = 0; f < nf; f++) {
        float r = r_s[f] * 0.6f;
        const float lin = residual_nl != NULL ? residual_lin[f] + residual_nl[f] : residual_lin[f];
        r = lin > r ? lin : r;
        r_s[f] = r;
        const float err = pe[f] > pe_s[f] ? pe[f] : pe_s[f];
        error[f] = err;
        sum_r += r;
        sum_e += err;
    }
    const double talk = (double)sum_e / ((double)sum_r + 1e-12);
    const int talking = talk >= (double)gp->talk_ratio;
    const float over = talking ? gp->over_talk : gp->over;
    for (Py_ssize_t f = 0; f < nf; f++) {
        float g = over * r_s[f];
        g /= error[f] + 1e-12f;
        g = 1.0f - g;
        gain[f] = g > gp->floor ? g : gp->floor;
    }
    return talking;
}

static int read_gain_params(PyObject *const *args, GainParams *gp) {
    double v[4];
    for (int i = 0; i < 4; i++) {
        v[i] = PyFloat_AsDouble(args[i]);
        if (v[i] == -1.0 && PyErr_Occurred()) {
            return -1;
        }
    }
    gp->over = (float)v[0];
    gp->over_talk = (float)v[1];
    gp->talk_ratio = (float)v[2];
    gp->floor = (float)v[3];
    return 0;
}

/* out = spectrum * gain: F complex bins (interleaved float pairs) times F real gains. */
static void apply_gain(Py_ssize_t nf, const float *spectrum, const float *gain, float *out) {
    for (Py_ssize_t f = 0; f < nf; f++) {
        out[2 * f] = spectrum[2 * f] * gain[f];
        out[2 * f + 1] = spectrum[2 * f + 1] * gain[f];
    }
}

/* update(spectra, smooth, X, pxk, W, P, Ws, residual_lin, rs_err, gain, ifft_in,
 *        m_scale, delta, a2, noise, j, js, over, over_talk, talk_ratio, floor
 *        [, residual_nl]) -> bool
 *
 * One far-end-active block between the forward FFT and the inverse one:
 *   spectra (3, F) complex64: the main error E, the suppressor's frame S, the shadow
 *     error Es;
 *   smooth (2, F) float32: the Kalman filter's error power m and the suppressor's pe_s,
 *     both averaged with this block's |E|^2 and |S|^2;
 *   the Kalman update of W (k, F complex64) and its uncertainty P (k, F float32) from
 *     X (k, F complex64) and its power pxk (k, F float32), with the process noise
 *     4 (1 - a2) |W|^2 when `noise`; residual_lin (F float32) = the expected
 *     misadjustment / 2;
 *   the NLMS update of the shadow Ws (ks, F complex64);
 *   the suppressor's gain (F float32; r_s in rs_err[0], rs_err[1] scratch), with
 *     residual_nl (F float32, optional: None or left out) added to residual_lin in its
 *     residual-echo estimate;
 *   ifft_in (3, F complex64) = W[j], Ws[js], S * gain (one inverse FFT).
 * Returns True while someone is talking (the suppressor's judgement). */
static PyObject *kernel_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t s_len, w_len, ws_len;
    if (nargs != 22 && check_nargs(nargs, 21, "update") < 0) {  /* residual_nl is optional */
        return NULL;
    }
    const float *spectra = get_buffer(&bufs, args[0], 0, -6 * (Py_ssize_t)sizeof(float), "spectra", &s_len);
    if (spectra == NULL) goto fail;
    const Py_ssize_t nf = s_len / (6 * (Py_ssize_t)sizeof(float));
    const Py_ssize_t rrow = nf * (Py_ssize_t)sizeof(float);  /* one float32 row */
    float *smooth = get_buffer(&bufs, args[1], 1, 2 * rrow, "smooth", NULL);
    if (smooth == NULL) goto fail;
    float *w = get_buffer(&bufs, args[4], 1, -2 * rrow, "W", &w_len);
    if (w == NULL) goto fail;
    const Py_ssize_t k = w_len / (2 * rrow);
    const float *x = get_buffer(&bufs, args[2], 0, 2 * k * rrow, "X", NULL);
    if (x == NULL) goto fail;
    const float *pxk = get_buffer(&bufs, args[3], 0, k * rrow, "pxk", NULL);
    if (pxk == NULL) goto fail;
    float *p = get_buffer(&bufs, args[5], 1, k * rrow, "P", NULL);
    if (p == NULL) goto fail;
    float *ws = get_buffer(&bufs, args[6], 1, -2 * rrow, "Ws", &ws_len);
    if (ws == NULL) goto fail;
    const Py_ssize_t ks = ws_len / (2 * rrow);
    float *residual_lin = get_buffer(&bufs, args[7], 1, rrow, "residual_lin", NULL);
    if (residual_lin == NULL) goto fail;
    float *rs_err = get_buffer(&bufs, args[8], 1, 2 * rrow, "rs_err", NULL);
    if (rs_err == NULL) goto fail;
    float *gain = get_buffer(&bufs, args[9], 1, rrow, "gain", NULL);
    if (gain == NULL) goto fail;
    float *ifft_in = get_buffer(&bufs, args[10], 1, 6 * rrow, "ifft_in", NULL);
    if (ifft_in == NULL) goto fail;
    const double m_scale_d = PyFloat_AsDouble(args[11]);
    const double delta_d = PyFloat_AsDouble(args[12]);
    const double a2_d = PyFloat_AsDouble(args[13]);
    const int noise = PyObject_IsTrue(args[14]);
    const long j = PyLong_AsLong(args[15]);
    const long js = PyLong_AsLong(args[16]);
    if (PyErr_Occurred() || noise < 0) goto fail;
    GainParams gp;
    if (read_gain_params(args + 17, &gp) < 0) goto fail;
    const float *residual_nl = NULL;
    if (nargs == 22 && args[21] != Py_None) {
        residual_nl = get_buffer(&bufs, args[21], 0, rrow, "residual_nl", NULL);
        if (residual_nl == NULL) goto fail;
    }
    if (ks > k || j < 0 || j >= k || js < 0 || js >= ks) {
        PyErr_SetString(PyExc_ValueError, "partition index out of range");
        goto fail;
    }
    const float m_scale = (float)m_scale_d, delta = (float)delta_d, a2 = (float)a2_d;
    const float p_keep = (float)(-0.5 * a2_d);
    const float noise_scale = (float)(4.0 * (1.0 - a2_d));
    const float *big_e = spectra;
    const float *big_s = spectra + 2 * nf;
    const float *big_es = spectra + 4 * nf;
    float *m = smooth;
    float *pe_s = smooth + nf;
    float *pe = rs_err + nf;  /* this block's |S|^2, until the gain overwrites the row */

    /* the error powers, smoothed (m for the Kalman gain, pe_s for the suppressor) */
    for (Py_ssize_t f = 0; f < nf; f++) {
        const float er = big_e[2 * f], ei = big_e[2 * f + 1];
        const float sr = big_s[2 * f], si = big_s[2 * f + 1];
        m[f] = (m[f] + (er * er + ei * ei)) * 0.5f;
        const float ps = sr * sr + si * si;
        pe[f] = ps;
        pe_s[f] = (pe_s[f] + ps) * 0.5f;
    }

    /* Kalman gain: the uncertainty P against the smoothed error power m */
    float *expected = gain;  /* scratch until the suppressor runs */
    memset(expected, 0, (size_t)rrow);
    for (Py_ssize_t i = 0; i < k; i++) {
        const float *pi = p + i * nf, *xi = pxk + i * nf;
        for (Py_ssize_t f = 0; f < nf; f++) {
            expected[f] += pi[f] * xi[f];
        }
    }
    for (Py_ssize_t f = 0; f < nf; f++) {
        residual_lin[f] = expected[f] * 0.5f;
        expected[f] = m[f] * m_scale + expected[f] + delta;  /* the denominator */
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        float *pi = p + i * nf;
        const float *xp = pxk + i * nf;
        float *wi = w + i * 2 * nf;
        const float *xi = x + i * 2 * nf;
        for (Py_ssize_t f = 0; f < nf; f++) {
            const float mu = pi[f] / expected[f];
            /* W += (mu conj(X)) E */
            const float gr = mu * xi[2 * f], gi = -(mu * xi[2 * f + 1]);
            const float er = big_e[2 * f], ei = big_e[2 * f + 1];
            wi[2 * f] += gr * er - gi * ei;
            wi[2 * f + 1] += gr * ei + gi * er;
            /* P *= a2 - a2/2 mu |X|^2 */
            pi[f] *= (mu * xp[f]) * p_keep + a2;
        }
    }
    if (noise) {
        for (Py_ssize_t i = 0; i < k; i++) {
            float *pi = p + i * nf;
            const float *wi = w + i * 2 * nf;
            for (Py_ssize_t f = 0; f < nf; f++) {
                const float wr = wi[2 * f], wim = wi[2 * f + 1];
                pi[f] += (wr * wr + wim * wim) * noise_scale;
            }
        }
    }

    /* the shadow: W_s += conj(X) 0.5 Es / (sum_{k < ks} |X|^2 + delta) */
    for (Py_ssize_t f = 0; f < nf; f++) {
        float power = 0.0f;
        for (Py_ssize_t i = 0; i < ks; i++) {
            power += pxk[i * nf + f];
        }
        power += delta;
        const float step = 0.5f / power;
        const float sr = big_es[2 * f] * step, si = big_es[2 * f + 1] * step;
        for (Py_ssize_t i = 0; i < ks; i++) {
            const float *xi = x + i * 2 * nf;
            const float xr = xi[2 * f], xim = -xi[2 * f + 1];
            float *wsi = ws + i * 2 * nf;
            wsi[2 * f] += xr * sr - xim * si;
            wsi[2 * f + 1] += xr * si + xim * sr;
        }
    }

    /* the suppressor, and the inverse FFT's input */
    const int talking = suppressor_gain(nf, pe, pe_s, residual_lin, residual_nl, rs_err, rs_err + nf,
                                        gain, &gp);
    memcpy(ifft_in, w + j * 2 * nf, (size_t)(2 * rrow));
    memcpy(ifft_in + 2 * nf, ws + js * 2 * nf, (size_t)(2 * rrow));
    apply_gain(nf, big_s, gain, ifft_in + 4 * nf);
    release_all(&bufs);
    return PyBool_FromLong(talking);
fail:
    release_all(&bufs);
    return NULL;
}

/* suppress(spectrum, smooth, residual_lin, rs_err, gain, out, over, over_talk,
 *          talk_ratio, floor) -> bool
 *
 * The suppressor alone (a block without filter update): pe_s = smooth[1] is averaged
 * with |spectrum|^2 (F complex64), the gain computed as in update(), and
 * out = spectrum * gain (F complex64). Returns True while someone is talking. */
static PyObject *kernel_suppress(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t s_len;
    if (check_nargs(nargs, 10, "suppress") < 0) {
        return NULL;
    }
    const float *spec = get_buffer(&bufs, args[0], 0, -2 * (Py_ssize_t)sizeof(float), "spectrum", &s_len);
    if (spec == NULL) goto fail;
    const Py_ssize_t nf = s_len / (2 * (Py_ssize_t)sizeof(float));
    const Py_ssize_t rrow = nf * (Py_ssize_t)sizeof(float);
    float *smooth = get_buffer(&bufs, args[1], 1, 2 * rrow, "smooth", NULL);
    if (smooth == NULL) goto fail;
    const float *residual_lin = get_buffer(&bufs, args[2], 0, rrow, "residual_lin", NULL);
    if (residual_lin == NULL) goto fail;
    float *rs_err = get_buffer(&bufs, args[3], 1, 2 * rrow, "rs_err", NULL);
    if (rs_err == NULL) goto fail;
    float *gain = get_buffer(&bufs, args[4], 1, rrow, "gain", NULL);
    if (gain == NULL) goto fail;
    float *out = get_buffer(&bufs, args[5], 1, 2 * rrow, "out", NULL);
    if (out == NULL) goto fail;
    GainParams gp;
    if (read_gain_params(args + 6, &gp) < 0) goto fail;
    float *pe_s = smooth + nf;
    float *pe = rs_err + nf;
    for (Py_ssize_t f = 0; f < nf; f++) {
        const float sr = spec[2 * f], si = spec[2 * f + 1];
        const float ps = sr * sr + si * si;
        pe[f] = ps;
        pe_s[f] = pe_s[f] * 0.5f + 0.5f * ps;
    }
    const int talking = suppressor_gain(nf, pe, pe_s, residual_lin, NULL, rs_err, rs_err + nf, gain, &gp);
    apply_gain(nf, spec, gain, out);
    release_all(&bufs);
    return PyBool_FromLong(talking);
fail:
    release_all(&bufs);
    return NULL;
}

/* output(times, window_pcm, ola, pcm, x_in) -> float
 *
 * times (rows, 2N) float32: the inverse FFT's frames, the suppressor's output in the last
 * row. That row times window_pcm (the synthesis window with the int16 scale), overlap-
 * added: pcm (N int16) = clip(rint(ola + first half)), ola (N float32) = second half.
 * With x_in ((3, 2N) float32, or None) and rows == 3, the first halves of rows 0-1 (the
 * constrained partitions' taps) go into the first halves of x_in's rows 1-2. Returns
 * the output's energy in float samples (before rounding, divided by 2**30). */
static PyObject *kernel_output(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t t_len, w_len;
    if (check_nargs(nargs, 5, "output") < 0) {
        return NULL;
    }
    const float *window = get_buffer(&bufs, args[1], 0, -2 * (Py_ssize_t)sizeof(float), "window_pcm", &w_len);
    if (window == NULL) goto fail;
    const Py_ssize_t m = w_len / (Py_ssize_t)sizeof(float);
    const Py_ssize_t n = m / 2;
    const float *times = get_buffer(&bufs, args[0], 0, -w_len, "times", &t_len);
    if (times == NULL) goto fail;
    const Py_ssize_t rows = t_len / w_len;
    float *ola = get_buffer(&bufs, args[2], 1, n * (Py_ssize_t)sizeof(float), "ola", NULL);
    if (ola == NULL) goto fail;
    int16_t *pcm = get_buffer(&bufs, args[3], 1, n * (Py_ssize_t)sizeof(int16_t), "pcm", NULL);
    if (pcm == NULL) goto fail;
    if (args[4] != Py_None) {
        float *x_in = get_buffer(&bufs, args[4], 1, 3 * w_len, "x_in", NULL);
        if (x_in == NULL) goto fail;
        if (rows != 3) {
            PyErr_SetString(PyExc_ValueError, "x_in needs the three rows of times");
            goto fail;
        }
        memcpy(x_in + m, times, (size_t)n * sizeof(float));
        memcpy(x_in + 2 * m, times + m, (size_t)n * sizeof(float));
    }
    const float *frame = times + (rows - 1) * m;
    float energy = 0.0f;
    for (Py_ssize_t i = 0; i < n; i++) {
        float v = ola[i] + frame[i] * window[i];
        ola[i] = frame[n + i] * window[n + i];
        energy += v * v;
        v = rintf(v);
        v = v < -32768.0f ? -32768.0f : (v > 32767.0f ? 32767.0f : v);
        if (v != v) {  /* NaN: no defined int16 */
            v = 0.0f;
        }
        pcm[i] = (int16_t)v;
    }
    release_all(&bufs);
    return PyFloat_FromDouble((double)energy * (1.0 / 1073741824.0));
fail:
    release_all(&bufs);
    return NULL;
}

/* ---- real FFTs ---------------------------------------------------------------------
 *
 * rfft/irfft of the canceller's 320-point frames without numpy's per-call cost (the
 * pocketfft ufuncs rebuild their plan on every call: most of a 320-point call). A real
 * FFT of n points is a complex FFT of n/2 (even samples as real, odd as imaginary parts)
 * plus a split; the complex FFT is a mixed-radix Cooley-Tukey with kissfft's radix 4, 2
 * and 5 butterflies and a direct DFT for 3, so n/2 must be 2^a 3^b 5^c (320: 2^5 5).
 * Twiddles are computed in double and stored as float32; the arithmetic is float32 like
 * pocketfft's single-precision transforms, whose results these match to rounding (~1e-7
 * relative), not bit for bit. One plan is kept (the last size used).
 *
 * kissfft recurses: each call gathers its inputs at a stride, combines them, and reads
 * its twiddles at index q k fstride. Here the plan unrolls that once: the gather order
 * of the whole recursion, and each stage's twiddles laid out in the order its butterflies
 * read them. A transform is then one gather and one pass per stage over contiguous
 * memory, a quarter fewer instructions than the recursion's index arithmetic and calls.
 * Every butterfly does kissfft's arithmetic on the same values in the same order, so the
 * results are the recursive version's bit for bit. */

typedef struct {
    float r, i;
} Cpx;

#define MAX_FACTORS 32

typedef struct {
    int p;               /* radix */
    Py_ssize_t m;        /* length of the sub-transforms each butterfly combines */
    Py_ssize_t tw_at;    /* its twiddles: m rows of p - 1 from here, in twiddles / inv_twiddles */
    Cpx roots[2][5];     /* exp(-+2 pi i q / p) for q < p (radix 5 and 3): forward, inverse */
} FftStage;

typedef struct {
    Py_ssize_t n;        /* real length */
    Py_ssize_t h;        /* complex length n / 2 */
    int stages;
    FftStage stage[MAX_FACTORS];  /* outermost (fstride 1) first */
    Py_ssize_t *order;   /* h: the input index gathered into each slot before the first stage */
    Cpx *twiddles;       /* per stage, for each k < m: w^(q k fstride), q = 1 .. p - 1; w = exp(-2 pi i / h) */
    Cpx *inv_twiddles;   /* the same, conjugated */
    Cpx *split;          /* exp(-2 pi i k / n), k <= h */
    Cpx *work;           /* h complex scratch */
} FftPlan;

static FftPlan plan = {0, 0, 0, {{0}}, NULL, NULL, NULL, NULL, NULL};

/* kissfft's recursion, walked once: the input index each leaf copies, in output order */
static Py_ssize_t fill_order(Py_ssize_t *order, Py_ssize_t at, Py_ssize_t in, Py_ssize_t fstride,
                             const FftStage *st) {
    for (int j = 0; j < st->p; j++) {
        if (st->m == 1) {
            order[at++] = in + j * fstride;
        } else {
            at = fill_order(order, at, in + j * fstride, fstride * st->p, st + 1);
        }
    }
    return at;
}

static int plan_for(Py_ssize_t n) {
    if (plan.n == n) {
        return 0;
    }
    if (n < 2 || n % 2 != 0) {
        PyErr_Format(PyExc_ValueError, "real FFT length %zd: must be even", n);
        return -1;
    }
    const Py_ssize_t h = n / 2;
    int radix[MAX_FACTORS];
    int count = 0;
    Py_ssize_t rest = h;
    const int radices[4] = {4, 2, 3, 5};
    for (int r = 0; r < 4; r++) {
        while (rest % radices[r] == 0 && count < MAX_FACTORS) {
            rest /= radices[r];
            radix[count++] = radices[r];
        }
    }
    if (rest != 1) {  /* the current plan stays intact */
        PyErr_Format(PyExc_ValueError, "real FFT length %zd: n/2 must be 2^a 3^b 5^c", n);
        return -1;
    }
    if (count == 0) {  /* h == 1: one stage that copies */
        radix[count++] = 1;
    }
    const Py_ssize_t n_tw = count * h;  /* each stage has m (p - 1) < h twiddles */
    PyMem_Free(plan.order);
    plan.order = PyMem_Malloc((size_t)h * sizeof(Py_ssize_t) +
                              (size_t)(2 * n_tw + 2 * h + 1) * sizeof(Cpx));
    if (plan.order == NULL) {
        plan.n = 0;
        PyErr_NoMemory();
        return -1;
    }
    plan.twiddles = (Cpx *)(plan.order + h);
    plan.inv_twiddles = plan.twiddles + n_tw;
    plan.work = plan.inv_twiddles + n_tw;
    plan.split = plan.work + h;
    const double pi = 3.14159265358979323846;
    Py_ssize_t m = h, fstride = 1, at = 0;
    for (int q = 0; q < count; q++) {
        FftStage *st = &plan.stage[q];
        st->p = radix[q];
        m /= st->p;
        st->m = m;
        st->tw_at = at;
        /* kissfft's table entry j = exp(-2 pi i j / h), as it computes and rounds it */
        for (Py_ssize_t k = 0; k < m; k++) {
            for (int r = 1; r < st->p; r++) {
                const double phase = -2.0 * pi * (double)(r * k * fstride) / (double)h;
                plan.twiddles[at].r = (float)cos(phase);
                plan.twiddles[at].i = (float)sin(phase);
                plan.inv_twiddles[at].r = plan.twiddles[at].r;
                plan.inv_twiddles[at].i = -plan.twiddles[at].i;
                at++;
            }
        }
        for (int r = 0; r < st->p && r < 5; r++) {
            const double phase = -2.0 * pi * (double)(r * fstride * m) / (double)h;
            st->roots[0][r].r = (float)cos(phase);
            st->roots[0][r].i = (float)sin(phase);
            st->roots[1][r].r = st->roots[0][r].r;
            st->roots[1][r].i = -st->roots[0][r].i;
        }
        fstride *= st->p;
    }
    plan.stages = count;
    fill_order(plan.order, 0, 0, 1, plan.stage);
    for (Py_ssize_t k = 0; k <= h; k++) {
        const double phase = -2.0 * pi * (double)k / (double)n;
        plan.split[k].r = (float)cos(phase);
        plan.split[k].i = (float)sin(phase);
    }
    plan.split[0].r = 1.0f;
    plan.split[0].i = 0.0f;
    plan.split[h].r = -1.0f;
    plan.split[h].i = 0.0f;
    plan.h = h;
    plan.n = n;
    return 0;
}

/* kissfft's radix-4 butterfly; `inverse` is a constant at each call, so it is compiled twice */
static inline void radix4(Cpx *out, Py_ssize_t m, const Cpx *tw, const int inverse) {
    for (Py_ssize_t k = 0; k < m; k++, tw += 3) {
        const Cpx a1 = out[k + m], w1 = tw[0];
        const Cpx a2 = out[k + 2 * m], w2 = tw[1];
        const Cpx a3 = out[k + 3 * m], w3 = tw[2];
        const Cpx s0 = {a1.r * w1.r - a1.i * w1.i, a1.r * w1.i + a1.i * w1.r};
        const Cpx s1 = {a2.r * w2.r - a2.i * w2.i, a2.r * w2.i + a2.i * w2.r};
        const Cpx s2 = {a3.r * w3.r - a3.i * w3.i, a3.r * w3.i + a3.i * w3.r};
        const Cpx s5 = {out[k].r - s1.r, out[k].i - s1.i};
        const Cpx f0 = {out[k].r + s1.r, out[k].i + s1.i};
        const Cpx s3 = {s0.r + s2.r, s0.i + s2.i};
        const Cpx s4 = {s0.r - s2.r, s0.i - s2.i};
        out[k + 2 * m].r = f0.r - s3.r;
        out[k + 2 * m].i = f0.i - s3.i;
        out[k].r = f0.r + s3.r;
        out[k].i = f0.i + s3.i;
        if (inverse) {
            out[k + m].r = s5.r - s4.i;
            out[k + m].i = s5.i + s4.r;
            out[k + 3 * m].r = s5.r + s4.i;
            out[k + 3 * m].i = s5.i - s4.r;
        } else {
            out[k + m].r = s5.r + s4.i;
            out[k + m].i = s5.i - s4.r;
            out[k + 3 * m].r = s5.r - s4.i;
            out[k + 3 * m].i = s5.i + s4.r;
        }
    }
}

static void radix2(Cpx *out, Py_ssize_t m, const Cpx *tw) {
    Cpx *b = out + m;
    for (Py_ssize_t k = 0; k < m; k++) {
        const Cpx w = tw[k];
        const Cpx t = {b[k].r * w.r - b[k].i * w.i, b[k].r * w.i + b[k].i * w.r};
        b[k].r = out[k].r - t.r;
        b[k].i = out[k].i - t.i;
        out[k].r += t.r;
        out[k].i += t.i;
    }
}

/* kissfft's radix-5 butterfly */
static void radix5(Cpx *out, Py_ssize_t m, const Cpx *tw, const Cpx *roots) {
    const Cpx ya = roots[1], yb = roots[2];
    Cpx *o0 = out, *o1 = out + m, *o2 = out + 2 * m, *o3 = out + 3 * m, *o4 = out + 4 * m;
    Cpx *const in5[5] = {o0, o1, o2, o3, o4};
    for (Py_ssize_t u = 0; u < m; u++, tw += 4) {
        Cpx s[5];
        s[0] = o0[u];
        for (int q = 1; q < 5; q++) {
            const Cpx a = in5[q][u], w = tw[q - 1];
            s[q].r = a.r * w.r - a.i * w.i;
            s[q].i = a.r * w.i + a.i * w.r;
        }
        const Cpx s7 = {s[1].r + s[4].r, s[1].i + s[4].i};
        const Cpx s10 = {s[1].r - s[4].r, s[1].i - s[4].i};
        const Cpx s8 = {s[2].r + s[3].r, s[2].i + s[3].i};
        const Cpx s9 = {s[2].r - s[3].r, s[2].i - s[3].i};
        o0[u].r = s[0].r + (s7.r + s8.r);
        o0[u].i = s[0].i + (s7.i + s8.i);
        const Cpx s5 = {s[0].r + s7.r * ya.r + s8.r * yb.r, s[0].i + s7.i * ya.r + s8.i * yb.r};
        const Cpx s6 = {s10.i * ya.i + s9.i * yb.i, -(s10.r * ya.i) - s9.r * yb.i};
        o1[u].r = s5.r - s6.r;
        o1[u].i = s5.i - s6.i;
        o4[u].r = s5.r + s6.r;
        o4[u].i = s5.i + s6.i;
        const Cpx s11 = {s[0].r + s7.r * yb.r + s8.r * ya.r, s[0].i + s7.i * yb.r + s8.i * ya.r};
        const Cpx s12 = {-(s10.i * yb.i) + s9.i * ya.i, s10.r * yb.i - s9.r * ya.i};
        o2[u].r = s11.r + s12.r;
        o2[u].i = s11.i + s12.i;
        o3[u].r = s11.r - s12.r;
        o3[u].i = s11.i - s12.i;
    }
}

/* 3 (or any small p): twiddle, then a direct DFT of p points */
static void radix_any(Cpx *out, int p, Py_ssize_t m, const Cpx *tw, const Cpx *roots) {
    Cpx scratch[5];
    for (Py_ssize_t u = 0; u < m; u++, tw += p - 1) {
        scratch[0] = out[u];
        for (int q = 1; q < p; q++) {
            const Cpx a = out[u + q * m], w = tw[q - 1];
            scratch[q].r = a.r * w.r - a.i * w.i;
            scratch[q].i = a.r * w.i + a.i * w.r;
        }
        for (int r = 0; r < p; r++) {
            Cpx acc = scratch[0];
            int idx = 0;
            for (int q = 1; q < p; q++) {
                idx += r;
                if (idx >= p) {
                    idx -= p;
                }
                const Cpx w = roots[idx];
                acc.r += scratch[q].r * w.r - scratch[q].i * w.i;
                acc.i += scratch[q].r * w.i + scratch[q].i * w.r;
            }
            out[u + r * m] = acc;
        }
    }
}

/* out[0 .. h) = the DFT of in[0 .. h) (inverse: unscaled) */
static void fft_run(Cpx *out, const Cpx *in, const int inverse) {
    const Py_ssize_t h = plan.h;
    const Py_ssize_t *order = plan.order;
    for (Py_ssize_t i = 0; i < h; i++) {
        out[i] = in[order[i]];
    }
    const Cpx *table = inverse ? plan.inv_twiddles : plan.twiddles;
    for (int q = plan.stages - 1; q >= 0; q--) {  /* the innermost sub-transforms first */
        const FftStage *st = &plan.stage[q];
        const Py_ssize_t m = st->m, span = st->p * m;
        const Cpx *tw = table + st->tw_at;
        for (Cpx *block = out; block != out + h; block += span) {
            switch (st->p) {
                case 4:
                    if (inverse) {
                        radix4(block, m, tw, 1);
                    } else {
                        radix4(block, m, tw, 0);
                    }
                    break;
                case 2:
                    radix2(block, m, tw);
                    break;
                case 5:
                    radix5(block, m, tw, st->roots[inverse]);
                    break;
                case 1:
                    break;
                default:
                    radix_any(block, st->p, m, tw, st->roots[inverse]);
            }
        }
    }
}

static void rfft_row(const float *x, float *spec) {
    const Py_ssize_t h = plan.h;
    Cpx *z = plan.work;
    fft_run(z, (const Cpx *)x, 0);
    for (Py_ssize_t bin = 0; bin <= h; bin++) {
        /* bin k from Z[k] and conj(Z[h - k]) (Z[h] is Z[0]) */
        const Cpx zk = z[bin == h ? 0 : bin];
        const Cpx zc = z[bin == 0 ? 0 : h - bin];  /* conj taken below */
        const float fe_r = 0.5f * (zk.r + zc.r), fe_i = 0.5f * (zk.i - zc.i);
        /* Fo = (Zk - conj(Zc)) / 2i */
        const float fo_r = 0.5f * (zk.i + zc.i), fo_i = -0.5f * (zk.r - zc.r);
        const Cpx w = plan.split[bin];
        spec[2 * bin] = fe_r + (w.r * fo_r - w.i * fo_i);
        spec[2 * bin + 1] = fe_i + (w.r * fo_i + w.i * fo_r);
    }
    spec[1] = 0.0f;
    spec[2 * h + 1] = 0.0f;
}

static void irfft_row(const float *spec, float *x, float scale) {
    const Py_ssize_t h = plan.h;
    Cpx *z = plan.work;
    for (Py_ssize_t k = 0; k < h; k++) {
        /* X[0] and X[h] count as real (their imaginary parts are ignored, as pocketfft does) */
        const float xr = spec[2 * k], xi = k == 0 ? 0.0f : spec[2 * k + 1];
        const float cr = spec[2 * (h - k)], ci = k == 0 ? 0.0f : -spec[2 * (h - k) + 1];
        const float fe_r = xr + cr, fe_i = xi + ci;
        const float d_r = xr - cr, d_i = xi - ci;
        const Cpx w = plan.split[k];  /* times conj(w) */
        const float fo_r = d_r * w.r + d_i * w.i, fo_i = d_i * w.r - d_r * w.i;
        z[k].r = fe_r - fo_i;  /* Fe + i Fo */
        z[k].i = fe_i + fo_r;
    }
    Cpx *out = (Cpx *)x;
    fft_run(out, z, 1);
    for (Py_ssize_t i = 0; i < 2 * h; i++) {
        x[i] *= scale;
    }
}

/* rfft(frames, spectra) -> spectra: frames (rows, n) float32, spectra (rows, n/2 + 1)
 * complex64 (1-D for one row) */
static PyObject *kernel_rfft(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t in_len;
    if (check_nargs(nargs, 2, "rfft") < 0) {
        return NULL;
    }
    const float *x = get_buffer(&bufs, args[0], 0, -(Py_ssize_t)sizeof(float), "frames", &in_len);
    if (x == NULL) goto fail;
    const Py_buffer *view = &bufs.views[0];
    const Py_ssize_t n = view->ndim > 0 ? view->shape[view->ndim - 1] : 0;
    if (plan_for(n) < 0) goto fail;
    const Py_ssize_t rows = in_len / (n * (Py_ssize_t)sizeof(float));
    float *spec = get_buffer(&bufs, args[1], 1, rows * (n + 2) * (Py_ssize_t)sizeof(float), "spectra", NULL);
    if (spec == NULL) goto fail;
    for (Py_ssize_t r = 0; r < rows; r++) {
        rfft_row(x + r * n, spec + r * (n + 2));
    }
    release_all(&bufs);
    Py_INCREF(args[1]);
    return args[1];
fail:
    release_all(&bufs);
    return NULL;
}

/* irfft(spectra, frames) -> frames: the inverse of rfft (scaled by 1/n) */
static PyObject *kernel_irfft(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t in_len;
    if (check_nargs(nargs, 2, "irfft") < 0) {
        return NULL;
    }
    const float *spec = get_buffer(&bufs, args[0], 0, -2 * (Py_ssize_t)sizeof(float), "spectra", &in_len);
    if (spec == NULL) goto fail;
    const Py_buffer *view = &bufs.views[0];
    const Py_ssize_t bins = view->ndim > 0 ? view->shape[view->ndim - 1] : 0;
    const Py_ssize_t n = 2 * (bins - 1);
    if (plan_for(n) < 0) goto fail;
    const Py_ssize_t rows = in_len / (bins * 2 * (Py_ssize_t)sizeof(float));
    float *x = get_buffer(&bufs, args[1], 1, rows * n * (Py_ssize_t)sizeof(float), "frames", NULL);
    if (x == NULL) goto fail;
    const float scale = (float)(1.0 / (double)n);
    for (Py_ssize_t r = 0; r < rows; r++) {
        irfft_row(spec + r * 2 * bins, x + r * n, scale);
    }
    release_all(&bufs);
    Py_INCREF(args[1]);
    return args[1];
fail:
    release_all(&bufs);
    return NULL;
}

/* coherence(E, X, px, s, pw, bias, fast, share, edges, rate, fast_rate) -> float
 *
 * The share of the error the reference explains, per band (audio/aec/coherence.py says
 * why). E (F) complex64: the error spectrum; X (>= L, F) complex64 and px (>= L, F)
 * float32: the reference spectra and their powers, newest first; edges (B + 1) intp:
 * the bands' first bins and one past the last (W = edges[B] - edges[0] bins). State,
 * updated in place at the rate ``rate``: s (L, W) complex64, the conjugated cross-spectra
 * <conj(E) X_k>; pw (L + 1, W) float32, the error's power then each lag's reference
 * power; bias (L, W) float32, what |s|^2 reads for unrelated signals; fast (B) float64,
 * the error's power per band at ``fast_rate``. Writes share (B) float64, each band's
 * share clipped to 0-1, and returns their mean. */
static PyObject *kernel_coherence(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t e_len, x_len, px_len, s_len, edges_len;
    if (check_nargs(nargs, 11, "coherence") < 0) {
        return NULL;
    }
    const double rate_d = PyFloat_AsDouble(args[9]);
    const double fast_rate = PyFloat_AsDouble(args[10]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    const Py_ssize_t *edges = get_buffer(&bufs, args[8], 0, -(Py_ssize_t)sizeof(Py_ssize_t),
                                         "edges", &edges_len);
    if (edges == NULL) goto fail;
    const Py_ssize_t nb = edges_len / (Py_ssize_t)sizeof(Py_ssize_t) - 1;
    const Py_ssize_t lo = edges[0], hi = edges[nb];
    const Py_ssize_t width = hi - lo;
    const float *e = get_buffer(&bufs, args[0], 0, -2 * (Py_ssize_t)sizeof(float), "E", &e_len);
    if (e == NULL) goto fail;
    const Py_ssize_t nf = e_len / (2 * (Py_ssize_t)sizeof(float));
    if (nb < 1 || lo < 0 || hi > nf || width < 1) {
        PyErr_SetString(PyExc_ValueError, "coherence: the band edges do not fit the spectrum");
        goto fail;
    }
    float *s = get_buffer(&bufs, args[3], 1, -2 * width * (Py_ssize_t)sizeof(float), "s", &s_len);
    if (s == NULL) goto fail;
    const Py_ssize_t lags = s_len / (2 * width * (Py_ssize_t)sizeof(float));
    const float *x = get_buffer(&bufs, args[1], 0, -2 * nf * (Py_ssize_t)sizeof(float), "X", &x_len);
    if (x == NULL) goto fail;
    const float *px = get_buffer(&bufs, args[2], 0, -nf * (Py_ssize_t)sizeof(float), "px", &px_len);
    if (px == NULL) goto fail;
    if (x_len < lags * 2 * nf * (Py_ssize_t)sizeof(float) || px_len < lags * nf * (Py_ssize_t)sizeof(float)) {
        PyErr_SetString(PyExc_ValueError, "coherence: fewer reference rows than lags");
        goto fail;
    }
    float *pw = get_buffer(&bufs, args[4], 1, (lags + 1) * width * (Py_ssize_t)sizeof(float), "pw", NULL);
    if (pw == NULL) goto fail;
    float *bias = get_buffer(&bufs, args[5], 1, lags * width * (Py_ssize_t)sizeof(float), "bias", NULL);
    if (bias == NULL) goto fail;
    double *fast = get_buffer(&bufs, args[6], 1, nb * (Py_ssize_t)sizeof(double), "fast", NULL);
    if (fast == NULL) goto fail;
    double *share = get_buffer(&bufs, args[7], 1, nb * (Py_ssize_t)sizeof(double), "share", NULL);
    if (share == NULL) goto fail;

    const float rate = (float)rate_d;
    const float keep = (float)(1.0 - rate_d);
    const float keep2 = (float)((1.0 - rate_d) * (1.0 - rate_d));
    const float rate2 = (float)(rate_d * rate_d);
    double total = 0.0;
    for (Py_ssize_t b = 0; b < nb; b++) {
        double err_sum = 0.0, expl_sum = 0.0, pe_sum = 0.0;
        for (Py_ssize_t f = edges[b]; f < edges[b + 1]; f++) {
            const Py_ssize_t w = f - lo;
            const float er = e[2 * f], ei = e[2 * f + 1];
            const float cr = er * rate, ci = -ei * rate;  /* rate * conj(E) */
            const float pe = er * er + ei * ei;
            pe_sum += pe;
            pw[w] = pw[w] * keep + rate * pe;
            err_sum += pw[w];
            const float bias_pe = rate2 * pe;
            float explained = 0.0f;
            for (Py_ssize_t k = 0; k < lags; k++) {
                const float xr = x[2 * (k * nf + f)], xi = x[2 * (k * nf + f) + 1];
                float *sk = s + 2 * (k * width + w);
                sk[0] = sk[0] * keep + (xr * cr - xi * ci);
                sk[1] = sk[1] * keep + (xr * ci + xi * cr);
                const float p = px[k * nf + f];
                float *pk = pw + (k + 1) * width + w;
                *pk = *pk * keep + rate * p;
                float *bk = bias + k * width + w;
                *bk = *bk * keep2 + p * bias_pe;
                float mag = sk[0] * sk[0] + sk[1] * sk[1];
                mag -= *bk;
                mag /= *pk;
                explained += mag;
            }
            expl_sum += explained;
        }
        fast[b] = fast[b] * (1.0 - fast_rate) + (double)(float)(fast_rate * pe_sum);
        const double den = err_sum > fast[b] ? err_sum : fast[b];
        double sh = expl_sum / den;
        sh = sh < 0.0 ? 0.0 : (sh > 1.0 ? 1.0 : sh);
        share[b] = sh;
        total += sh;
    }
    release_all(&bufs);
    return PyFloat_FromDouble(total / (double)nb);
fail:
    release_all(&bufs);
    return NULL;
}

/* distortion(E, Y, means, fits, edges, out, spread, mean_rate, rate, talking) -> None
 *
 * The loudspeaker's distortion in the error (audio/aec/distortion.py says why). E, Y (F)
 * complex64: the main filter's error and echo estimate; edges (B + 1) intp: the bands'
 * first bins, then F. The echo estimate's power is averaged over `spread` bins either
 * side (zeros past the ends, always divided by 2 spread + 1). State, in place: means
 * (2, F) float64, the error's power and that spread power at `mean_rate`; fits (2, B)
 * float64, per band the regression's covariance and variance of the two powers'
 * fluctuations (each block's terms over the spread power's fluctuation norm), at `rate`
 * and only while not `talking`. Writes out (F) float32: each band's share (clipped to
 * 0-1) times the spread power, or zeros while `talking`. */
#define MAX_BINS 1024
static PyObject *kernel_distortion(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t e_len, edges_len;
    if (check_nargs(nargs, 10, "distortion") < 0) {
        return NULL;
    }
    const long spread = PyLong_AsLong(args[6]);
    const double mean_rate = PyFloat_AsDouble(args[7]);
    const double rate = PyFloat_AsDouble(args[8]);
    const int talking = PyObject_IsTrue(args[9]);
    if (PyErr_Occurred() || talking < 0) {
        return NULL;
    }
    const float *e = get_buffer(&bufs, args[0], 0, -2 * (Py_ssize_t)sizeof(float), "E", &e_len);
    if (e == NULL) goto fail;
    const Py_ssize_t nf = e_len / (2 * (Py_ssize_t)sizeof(float));
    const Py_ssize_t *edges = get_buffer(&bufs, args[4], 0, -(Py_ssize_t)sizeof(Py_ssize_t),
                                         "edges", &edges_len);
    if (edges == NULL) goto fail;
    const Py_ssize_t nb = edges_len / (Py_ssize_t)sizeof(Py_ssize_t) - 1;
    if (nf > MAX_BINS || spread < 0 || nb < 1 || edges[0] != 0 || edges[nb] != nf) {
        PyErr_SetString(PyExc_ValueError, "distortion: the bands must cover the spectrum's bins "
                        "(at most 1024) and spread must be >= 0");
        goto fail;
    }
    const float *y = get_buffer(&bufs, args[1], 0, 2 * nf * (Py_ssize_t)sizeof(float), "Y", NULL);
    if (y == NULL) goto fail;
    double *means = get_buffer(&bufs, args[2], 1, 2 * nf * (Py_ssize_t)sizeof(double), "means", NULL);
    if (means == NULL) goto fail;
    double *fits = get_buffer(&bufs, args[3], 1, 2 * nb * (Py_ssize_t)sizeof(double), "fits", NULL);
    if (fits == NULL) goto fail;
    float *out = get_buffer(&bufs, args[5], 1, nf * (Py_ssize_t)sizeof(float), "out", NULL);
    if (out == NULL) goto fail;

    double cum[MAX_BINS + 1], e_dev[MAX_BINS], s_dev[MAX_BINS], spread_power[MAX_BINS];
    cum[0] = 0.0;
    for (Py_ssize_t f = 0; f < nf; f++) {
        const double yr = y[2 * f], yi = y[2 * f + 1];
        cum[f + 1] = cum[f] + (yr * yr + yi * yi);
    }
    const double width = (double)(2 * spread + 1);
    double norm = 0.0;
    for (Py_ssize_t f = 0; f < nf; f++) {
        const Py_ssize_t lo = f - spread < 0 ? 0 : f - spread;
        const Py_ssize_t hi = f + spread + 1 > nf ? nf : f + spread + 1;
        spread_power[f] = (cum[hi] - cum[lo]) / width;
        const double er = e[2 * f], ei = e[2 * f + 1];
        e_dev[f] = (er * er + ei * ei) - means[f];
        s_dev[f] = spread_power[f] - means[nf + f];
        means[f] += mean_rate * e_dev[f];
        means[nf + f] += mean_rate * s_dev[f];
        norm += s_dev[f] * s_dev[f];
    }
    if (talking) {
        memset(out, 0, (size_t)nf * sizeof(float));
        release_all(&bufs);
        Py_RETURN_NONE;
    }
    norm = sqrt(norm) + 1e-12;
    for (Py_ssize_t b = 0; b < nb; b++) {
        double cov = 0.0, var = 0.0;
        for (Py_ssize_t f = edges[b]; f < edges[b + 1]; f++) {
            cov += e_dev[f] * s_dev[f];
            var += s_dev[f] * s_dev[f];
        }
        fits[b] += rate * (cov / norm - fits[b]);
        fits[nb + b] += rate * (var / norm - fits[nb + b]);
        double share = fits[b] / (fits[nb + b] + 1e-12);
        share = share < 0.0 ? 0.0 : (share > 1.0 ? 1.0 : share);
        for (Py_ssize_t f = edges[b]; f < edges[b + 1]; f++) {
            out[f] = (float)(share * spread_power[f]);
        }
    }
    release_all(&bufs);
    Py_RETURN_NONE;
fail:
    release_all(&bufs);
    return NULL;
}

/* leak(E, Y, means, py, mean_rate) -> (error_sum, echo_sum, cov, var)
 *
 * One block of the leak estimate's statistics (audio/aec/leak.py says why): E, Y (F)
 * complex64, the main filter's error and echo estimate. Writes py (F) float32 = |Y|^2.
 * The powers' fluctuations are taken from their means, means (2, F) float32 (the error's,
 * the echo estimate's), which then move towards the powers at `mean_rate`. Returns the
 * sums over bins of |E|^2 and of |Y|^2, and the fluctuations' covariance and the echo
 * estimate's variance (sums of products over bins). Element-wise in float32 as the numpy
 * path; the sums in double. */
static PyObject *kernel_leak(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t e_len;
    if (check_nargs(nargs, 5, "leak") < 0) {
        return NULL;
    }
    const float rate = (float)PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    const float *e = get_buffer(&bufs, args[0], 0, -2 * (Py_ssize_t)sizeof(float), "E", &e_len);
    if (e == NULL) goto fail;
    const Py_ssize_t nf = e_len / (2 * (Py_ssize_t)sizeof(float));
    const float *y = get_buffer(&bufs, args[1], 0, 2 * nf * (Py_ssize_t)sizeof(float), "Y", NULL);
    if (y == NULL) goto fail;
    float *means = get_buffer(&bufs, args[2], 1, 2 * nf * (Py_ssize_t)sizeof(float), "means", NULL);
    if (means == NULL) goto fail;
    float *py = get_buffer(&bufs, args[3], 1, nf * (Py_ssize_t)sizeof(float), "py", NULL);
    if (py == NULL) goto fail;
    float *e_mean = means, *y_mean = means + nf;
    double see = 0.0, syy = 0.0, cov = 0.0, var = 0.0;
    for (Py_ssize_t f = 0; f < nf; f++) {
        const float pe = e[2 * f] * e[2 * f] + e[2 * f + 1] * e[2 * f + 1];
        const float pyf = y[2 * f] * y[2 * f] + y[2 * f + 1] * y[2 * f + 1];
        const float e_dev = pe - e_mean[f], y_dev = pyf - y_mean[f];
        e_mean[f] += rate * e_dev;
        y_mean[f] += rate * y_dev;
        py[f] = pyf;
        see += pe;
        syy += pyf;
        cov += (double)e_dev * y_dev;
        var += (double)y_dev * y_dev;
    }
    release_all(&bufs);
    return Py_BuildValue("(dddd)", see, syy, cov, var);
fail:
    release_all(&bufs);
    return NULL;
}

static PyMethodDef kernel_methods[] = {
    {"rfft", (PyCFunction)(void (*)(void))kernel_rfft, METH_FASTCALL,
     "rfft(frames, spectra) -> spectra: real FFT along the last axis (float32 -> complex64)"},
    {"irfft", (PyCFunction)(void (*)(void))kernel_irfft, METH_FASTCALL,
     "irfft(spectra, frames) -> frames: inverse real FFT along the last axis, scaled by 1/n"},
    {"estimate", (PyCFunction)(void (*)(void))kernel_estimate, METH_FASTCALL,
     "estimate(W, Ws, X, wx, p0) -> float: both filters' echo spectra, |X[0]|^2 and its sum"},
    {"errors", (PyCFunction)(void (*)(void))kernel_errors, METH_FASTCALL,
     "errors(d, echo, fft_in) -> (e_energy, es_energy, d_energy): both filters' errors"},
    {"frame", (PyCFunction)(void (*)(void))kernel_frame, METH_FASTCALL,
     "frame(frame, fft_in, window, row): slide the suppressor's frame, window it into fft_in[1]"},
    {"update", (PyCFunction)(void (*)(void))kernel_update, METH_FASTCALL,
     "update(...) -> bool: error powers, Kalman and shadow updates, suppressor gains"},
    {"suppress", (PyCFunction)(void (*)(void))kernel_suppress, METH_FASTCALL,
     "suppress(...) -> bool: the suppressor alone (no filter update)"},
    {"distortion", (PyCFunction)(void (*)(void))kernel_distortion, METH_FASTCALL,
     "distortion(E, Y, means, fits, edges, out, spread, mean_rate, rate, talking) -> None: "
     "the loudspeaker's distortion in the error, per bin"},
    {"leak", (PyCFunction)(void (*)(void))kernel_leak, METH_FASTCALL,
     "leak(E, Y, means, py, mean_rate) -> (error_sum, echo_sum, cov, var): the leak estimate's "
     "statistics of one block"},
    {"coherence", (PyCFunction)(void (*)(void))kernel_coherence, METH_FASTCALL,
     "coherence(E, X, px, s, pw, bias, fast, share, edges, rate, fast_rate) -> float: "
     "the share of the error the reference explains, per band"},
    {"output", (PyCFunction)(void (*)(void))kernel_output, METH_FASTCALL,
     "output(times, window_pcm, ola, pcm, x_in) -> float: synthesis window, overlap-add, int16"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    "_kernel",
    "The edgevoice echo canceller's per-block arithmetic in C (see audio/aec/engine.py).",
    -1,
    kernel_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&kernel_module); }
