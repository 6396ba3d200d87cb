/* The edgevoice echo canceller's per-block arithmetic, compiled.
 *
 * audio/aec/engine.py holds the reference implementation in numpy; at 161 bins numpy's
 * per-call cost, not the arithmetic, is what a block costs there (~80 calls). These
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

/* The residual-echo suppressor's gain per bin (the engine's _gain): r_s released like
 * the room and held above residual_lin, the error max(pe, pe_s), a Wiener-style gain
 * with the overestimate, floored. Returns 1 while someone talks (error >> residual). */
static int suppressor_gain(Py_ssize_t nf, const float *pe, const float *pe_s, const float *residual_lin,
                           float *r_s, float *error, float *gain, const GainParams *gp) {
    float sum_r = 0.0f, sum_e = 0.0f;
    for (Py_ssize_t f = 0; f < nf; f++) {
        float r = r_s[f] * 0.6f;
        r = residual_lin[f] > r ? residual_lin[f] : r;
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

/* update(spectra, smooth, X, pxk, W, P, Ws, residual_lin, rs_err, gain, ifft_in,
 *        m_scale, delta, a2, noise, j, js, over, over_talk, talk_ratio, floor) -> bool
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
 *   the suppressor's gain (F float32; r_s in rs_err[0], rs_err[1] scratch);
 *   ifft_in (3, F complex64) = W[j], Ws[js], S * gain (one inverse FFT).
 * Returns True while someone is talking (the suppressor's judgement). */
static PyObject *kernel_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Buffers bufs = {.count = 0};
    Py_ssize_t s_len, w_len, ws_len;
    if (check_nargs(nargs, 21, "update") < 0) {
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
    const int talking = suppressor_gain(nf, pe, pe_s, residual_lin, rs_err, rs_err + nf, gain, &gp);
    memcpy(ifft_in, w + j * 2 * nf, (size_t)(2 * rrow));
    memcpy(ifft_in + 2 * nf, ws + js * 2 * nf, (size_t)(2 * rrow));
    float *out = ifft_in + 4 * nf;
    for (Py_ssize_t f = 0; f < nf; f++) {
        out[2 * f] = big_s[2 * f] * gain[f];
        out[2 * f + 1] = big_s[2 * f + 1] * gain[f];
    }
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
    const int talking = suppressor_gain(nf, pe, pe_s, residual_lin, rs_err, rs_err + nf, gain, &gp);
    for (Py_ssize_t f = 0; f < nf; f++) {
        out[2 * f] = spec[2 * f] * gain[f];
        out[2 * f + 1] = spec[2 * f + 1] * gain[f];
    }
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
        pcm[i] = (int16_t)v;
    }
    release_all(&bufs);
    return PyFloat_FromDouble((double)energy * (1.0 / 1073741824.0));
fail:
    release_all(&bufs);
    return NULL;
}

static PyMethodDef kernel_methods[] = {
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
