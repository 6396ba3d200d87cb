/* The duplex period loop in C: its own thread, libasound directly, the GIL never taken.
 *
 * Python (audio/io/rtloop.py) keeps the conversions (channel mixing, S32 → 16 bits, rates)
 * and the speaker; this loop only moves bytes on time. Per period the thread
 *
 *   1. snd_pcm_readi()s one capture period straight into the next slot of the capture
 *      ring (a scratch buffer when the ring is full: the consumer is seconds behind);
 *   2. pops one playback period from the playback ring (device bytes + the 16 kHz mono
 *      period they were made from), or silence when Python has not supplied one;
 *   3. snd_pcm_writei()s it;
 *   4. copies that period's 16 kHz samples next to the capture in the same slot — the
 *      echo reference is the exact frames written in the same iteration, by
 *      construction — and publishes the slot with the playback delay, flags and how
 *      late the read returned against the period clock.
 *
 * Rings are single-producer single-consumer with C11 atomics: the capture ring is
 * filled by the loop and emptied by Python, the playback ring the other way round.
 * Python waits for capture with the GIL released (a mutex and condition variable that
 * the loop signals only when a reader is waiting).
 *
 * Xruns: -EPIPE / -ESTRPIPE from a read or write are counted, recovered with
 * snd_pcm_recover(), and flagged on the next published period (RT_FLAG_*), so the
 * consumer knows the capture/playback alignment may have moved; after an underrun the
 * playback buffer is pre-filled again to the same depth, so the written reference keeps
 * its fixed delay. Any other error ends the thread with the error kept for Python
 * (read() raises OSError), which reopens the device with backoff.
 *
 * Real-time: the thread asks for SCHED_FIFO at the given priority and runs on a stack
 * of its own that is locked in memory, as are the rings; where that is not allowed the
 * loop runs anyway and stats() says why (Python logs it once).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <alsa/asoundlib.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define RT_FLAG_OVERRUN 1u      /* capture overran (and was recovered) before this period */
#define RT_FLAG_UNDERRUN 2u     /* playback underran (and was recovered) before this period */
#define RT_FLAG_PLAY_EMPTY 4u   /* no playback period was supplied: silence was written */
#define RT_FLAG_RING_DROPPED 8u /* capture periods were lost before this one (ring full) */
#define RT_FLAG_FIRST 16u       /* the first period after start */

#define LATE_BUCKETS 10
static const int64_t LATE_BOUNDS_NS[LATE_BUCKETS - 1] = {
    1000000, 2000000, 5000000, 10000000, 20000000, 40000000, 80000000, 160000000, 320000000};

#define STACK_BYTES (256 * 1024)
#define MAX_XRUNS_IN_A_ROW 50

typedef struct {
    uint64_t index;
    int64_t done_ns;
    int64_t late_ns;
    int64_t delay_frames;
    uint32_t flags;
} SlotMeta;

typedef struct {
    PyObject_HEAD
    /* configuration */
    char *capture_name;
    char *playback_name;
    unsigned int capture_channels, capture_rate, playback_channels, playback_rate;
    int sample_bytes; /* 2: S16_LE, 4: S32_LE */
    snd_pcm_uframes_t capture_period, playback_period;
    unsigned int buffer_periods, prefill_periods;
    size_t ref_bytes;
    int rt_priority;
    int paced; /* 0: the device returns at once (a plain file): wait for ring room, drop nothing */
    /* devices */
    snd_pcm_t *capture;
    snd_pcm_t *playback;
    snd_pcm_uframes_t playback_buffer;
    size_t capture_bytes, playback_bytes;
    /* capture ring: slot = capture bytes + reference bytes */
    uint8_t *cap_data;
    SlotMeta *cap_meta;
    uint64_t cap_slots; /* power of two */
    _Atomic uint64_t cap_head, cap_tail;
    /* playback ring: slot = device bytes + reference bytes */
    uint8_t *play_data;
    uint64_t play_slots;
    _Atomic uint64_t play_head, play_tail;
    uint8_t *scratch;
    uint8_t *silence;
    size_t locked_bytes;
    /* thread */
    pthread_t thread;
    void *stack;
    int thread_started;
    _Atomic int stop;
    _Atomic int finished;
    _Atomic int waiting;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int error; /* negative errno that ended the loop, 0 */
    char error_where[16];
    /* real-time status */
    int rt_error;    /* errno of pthread_setschedparam, 0: SCHED_FIFO granted; -1 not asked */
    int mlock_error; /* errno of mlock, 0: locked */
    /* counters (written by the loop, read by stats()) */
    _Atomic uint64_t periods, overruns, underruns, play_empty, ring_dropped;
    _Atomic uint64_t late_hist[LATE_BUCKETS];
    _Atomic uint64_t late_ge_buffer;
    _Atomic int64_t late_max_ns;
    _Atomic int64_t work_max_ns; /* read returned → slot published */
    _Atomic int64_t thread_cpu_ns;
    /* test hook: the next inject_count reads return inject_code instead of reading */
    _Atomic int inject_code;
    _Atomic int inject_count;
} RtLoop;

static int64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t pow2_at_least(uint64_t n) {
    uint64_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

static void atomic_max(_Atomic int64_t *target, int64_t value) {
    int64_t seen = atomic_load_explicit(target, memory_order_relaxed);
    while (value > seen &&
           !atomic_compare_exchange_weak_explicit(target, &seen, value, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

/* --- devices ------------------------------------------------------------------------------ */

static int set_params(snd_pcm_t *pcm, snd_pcm_format_t format, unsigned int channels,
                      unsigned int *rate, snd_pcm_uframes_t *period, unsigned int periods,
                      snd_pcm_uframes_t *buffer, snd_pcm_uframes_t start_threshold) {
    snd_pcm_hw_params_t *hw;
    snd_pcm_sw_params_t *sw;
    int err;
    int dir = 0;
    snd_pcm_hw_params_alloca(&hw);
    snd_pcm_sw_params_alloca(&sw);
    if ((err = snd_pcm_hw_params_any(pcm, hw)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_format(pcm, hw, format)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_channels(pcm, hw, channels)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_rate_near(pcm, hw, rate, &dir)) < 0) return err;
    dir = 0;
    if ((err = snd_pcm_hw_params_set_period_size_near(pcm, hw, period, &dir)) < 0) return err;
    *buffer = *period * periods;
    if ((err = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, buffer)) < 0) return err;
    if ((err = snd_pcm_hw_params(pcm, hw)) < 0) return err;
    if ((err = snd_pcm_sw_params_current(pcm, sw)) < 0) return err;
    if ((err = snd_pcm_sw_params_set_avail_min(pcm, sw, *period)) < 0) return err;
    if ((err = snd_pcm_sw_params_set_start_threshold(pcm, sw, start_threshold)) < 0) return err;
    return snd_pcm_sw_params(pcm, sw);
}

static void close_devices(RtLoop *self) {
    if (self->capture != NULL) {
        snd_pcm_close(self->capture);
        self->capture = NULL;
    }
    if (self->playback != NULL) {
        snd_pcm_close(self->playback);
        self->playback = NULL;
    }
}

/* Opens both PCMs (called without the GIL). Returns 0 or a negative errno; *where says which. */
static int open_devices(RtLoop *self, const char **where) {
    int err;
    unsigned int rate;
    snd_pcm_uframes_t period, buffer;
    snd_pcm_format_t format = self->sample_bytes == 4 ? SND_PCM_FORMAT_S32_LE : SND_PCM_FORMAT_S16_LE;
    *where = "capture";
    if ((err = snd_pcm_open(&self->capture, self->capture_name, SND_PCM_STREAM_CAPTURE, 0)) < 0) {
        self->capture = NULL;
        return err;
    }
    rate = self->capture_rate;
    period = self->capture_period;
    if ((err = set_params(self->capture, format, self->capture_channels, &rate, &period,
                          self->buffer_periods, &buffer, 1)) < 0)
        return err;
    self->capture_rate = rate;
    if (period != self->capture_period) return -EINVAL; /* the ring slots are sized for it */
    *where = "playback";
    if ((err = snd_pcm_open(&self->playback, self->playback_name, SND_PCM_STREAM_PLAYBACK, 0)) < 0) {
        self->playback = NULL;
        return err;
    }
    rate = self->playback_rate;
    period = self->playback_period;
    if ((err = set_params(self->playback, SND_PCM_FORMAT_S16_LE, self->playback_channels, &rate,
                          &period, self->buffer_periods, &buffer,
                          self->playback_period * (self->prefill_periods ? self->prefill_periods : 1))) < 0)
        return err;
    self->playback_rate = rate;
    self->playback_buffer = buffer;
    if (period != self->playback_period) return -EINVAL;
    return 0;
}

/* --- the loop thread (no Python API below this line until the methods) -------------------- */

static int prefill(RtLoop *self) {
    for (unsigned int i = 0; i < self->prefill_periods; i++) {
        snd_pcm_sframes_t n = snd_pcm_writei(self->playback, self->silence, self->playback_period);
        if (n < 0) return (int)n;
    }
    return 0;
}

static void fail(RtLoop *self, int err, const char *where) {
    self->error = err;
    snprintf(self->error_where, sizeof self->error_where, "%s", where);
}

/* One full capture period into buf; returns 0, a negative fatal errno, or 1 after an xrun. */
static int read_period(RtLoop *self, uint8_t *buf, int *xruns_in_a_row) {
    snd_pcm_uframes_t done = 0;
    size_t frame_bytes = (size_t)self->sample_bytes * self->capture_channels;
    int xrun = 0;
    while (done < self->capture_period) {
        snd_pcm_sframes_t n;
        if (atomic_load_explicit(&self->inject_count, memory_order_relaxed) > 0) {
            atomic_fetch_sub(&self->inject_count, 1);
            n = atomic_load(&self->inject_code);
        } else {
            n = snd_pcm_readi(self->capture, buf + done * frame_bytes, self->capture_period - done);
        }
        if (n >= 0) {
            done += (snd_pcm_uframes_t)n;
            continue;
        }
        if (n == -EPIPE || n == -ESTRPIPE || n == -EINTR) {
            if (n != -EINTR) {
                atomic_fetch_add(&self->overruns, 1);
                xrun = 1;
                if (++*xruns_in_a_row >= MAX_XRUNS_IN_A_ROW) return -EIO;
            }
            int err = snd_pcm_recover(self->capture, (int)n, 1);
            if (err < 0) return err;
            done = 0; /* start the period again on the recovered stream */
            continue;
        }
        return (int)n;
    }
    return xrun;
}

static int write_period(RtLoop *self, const uint8_t *data, int *xrun) {
    snd_pcm_uframes_t done = 0;
    size_t frame_bytes = 2u * self->playback_channels;
    int attempts = 0;
    while (done < self->playback_period) {
        snd_pcm_sframes_t n =
            snd_pcm_writei(self->playback, data + done * frame_bytes, self->playback_period - done);
        if (n >= 0) {
            done += (snd_pcm_uframes_t)n;
            continue;
        }
        if ((n == -EPIPE || n == -ESTRPIPE || n == -EINTR) && attempts++ < 4) {
            if (n != -EINTR) {
                atomic_fetch_add(&self->underruns, 1);
                *xrun = 1;
            }
            int err = snd_pcm_recover(self->playback, (int)n, 1);
            if (err < 0) return err;
            if (n != -EINTR && (err = prefill(self)) < 0) return err; /* the same depth again */
            continue;
        }
        return (int)n;
    }
    return 0;
}

static void *loop_main(void *arg) {
    RtLoop *self = (RtLoop *)arg;
    const size_t cap_slot = self->capture_bytes + self->ref_bytes;
    const size_t play_slot = self->playback_bytes + self->ref_bytes;
    const int64_t period_ns = (int64_t)self->capture_period * 1000000000LL / self->capture_rate;
    const int64_t buffer_ns = period_ns * self->buffer_periods;
    int64_t anchor = 0;
    uint64_t since_anchor = 0;
    uint64_t index = 0;
    uint32_t pending = RT_FLAG_FIRST;
    int xruns_in_a_row = 0;
    int err;

    if (self->rt_priority > 0) {
        struct sched_param param = {.sched_priority = self->rt_priority};
        self->rt_error = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
    }
    if ((err = prefill(self)) < 0) {
        fail(self, err, "playback");
        goto done;
    }
    if ((err = snd_pcm_start(self->capture)) < 0 && snd_pcm_state(self->capture) != SND_PCM_STATE_RUNNING) {
        fail(self, err, "capture");
        goto done;
    }
    while (!atomic_load_explicit(&self->stop, memory_order_relaxed)) {
        uint64_t head = atomic_load_explicit(&self->cap_head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&self->cap_tail, memory_order_acquire);
        int full = head - tail >= self->cap_slots;
        if (full && !self->paced) {
            struct timespec pause = {0, 500000};
            nanosleep(&pause, NULL);
            continue;
        }
        uint8_t *slot = full ? self->scratch : self->cap_data + (head & (self->cap_slots - 1)) * cap_slot;
        int got = read_period(self, slot, &xruns_in_a_row);
        if (got < 0) {
            fail(self, got, "capture");
            break;
        }
        int64_t done_ns = now_ns(CLOCK_MONOTONIC);
        if (got == 1) {
            pending |= RT_FLAG_OVERRUN;
            since_anchor = 0; /* the stream restarted: a new period clock */
        } else {
            xruns_in_a_row = 0;
        }
        /* lateness against the period clock (re-anchored whenever the device is early) */
        int64_t late = 0;
        if (since_anchor == 0) {
            anchor = done_ns;
        } else {
            late = done_ns - (anchor + (int64_t)since_anchor * period_ns);
            if (late < 0) {
                anchor += late;
                late = 0;
            }
        }
        since_anchor++;
        int bucket = 0;
        while (bucket < LATE_BUCKETS - 1 && late >= LATE_BOUNDS_NS[bucket]) bucket++;
        atomic_fetch_add_explicit(&self->late_hist[bucket], 1, memory_order_relaxed);
        if (late >= buffer_ns) atomic_fetch_add_explicit(&self->late_ge_buffer, 1, memory_order_relaxed);
        atomic_max(&self->late_max_ns, late);

        /* playback: the next supplied period, or silence */
        uint64_t phead = atomic_load_explicit(&self->play_head, memory_order_acquire);
        uint64_t ptail = atomic_load_explicit(&self->play_tail, memory_order_relaxed);
        /* virtual time: one period out for every period in, in step with Python (whose
         * read() supplies silence for a reader that writes nothing) */
        while (!self->paced && phead == ptail && !atomic_load_explicit(&self->stop, memory_order_relaxed)) {
            struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL);
            phead = atomic_load_explicit(&self->play_head, memory_order_acquire);
        }
        const uint8_t *out = self->silence;
        const uint8_t *ref = NULL;
        /* claim the slot before using it: Python may discard what is queued (discard()) */
        if (phead != ptail && atomic_compare_exchange_strong(&self->play_tail, &ptail, ptail + 1)) {
            out = self->play_data + (ptail & (self->play_slots - 1)) * play_slot;
            ref = out + self->playback_bytes;
        } else {
            pending |= RT_FLAG_PLAY_EMPTY;
            atomic_fetch_add_explicit(&self->play_empty, 1, memory_order_relaxed);
        }
        int under = 0;
        if ((err = write_period(self, out, &under)) < 0) {
            fail(self, err, "playback");
            break;
        }
        if (under) pending |= RT_FLAG_UNDERRUN;
        snd_pcm_sframes_t delay = 0;
        if (snd_pcm_delay(self->playback, &delay) < 0) delay = -1;
        if (full) {
            atomic_fetch_add_explicit(&self->ring_dropped, 1, memory_order_relaxed);
            pending |= RT_FLAG_RING_DROPPED;
        } else {
            uint8_t *slot_ref = slot + self->capture_bytes;
            if (ref != NULL)
                memcpy(slot_ref, ref, self->ref_bytes);
            else
                memset(slot_ref, 0, self->ref_bytes);
        }
        if (!full) {
            SlotMeta *meta = &self->cap_meta[head & (self->cap_slots - 1)];
            meta->index = index;
            meta->done_ns = done_ns;
            meta->late_ns = late;
            meta->delay_frames = delay;
            meta->flags = pending;
            pending = 0;
            atomic_store_explicit(&self->cap_head, head + 1, memory_order_seq_cst);
            if (atomic_load_explicit(&self->waiting, memory_order_seq_cst)) {
                pthread_mutex_lock(&self->mutex);
                pthread_cond_signal(&self->cond);
                pthread_mutex_unlock(&self->mutex);
            }
        }
        index++;
        atomic_fetch_add_explicit(&self->periods, 1, memory_order_relaxed);
        atomic_max(&self->work_max_ns, now_ns(CLOCK_MONOTONIC) - done_ns);
        if ((index & 15) == 0)
            atomic_store_explicit(&self->thread_cpu_ns, now_ns(CLOCK_THREAD_CPUTIME_ID), memory_order_relaxed);
    }
done:
    atomic_store(&self->thread_cpu_ns, now_ns(CLOCK_THREAD_CPUTIME_ID));
    atomic_store(&self->finished, 1);
    pthread_mutex_lock(&self->mutex);
    pthread_cond_broadcast(&self->cond);
    pthread_mutex_unlock(&self->mutex);
    return NULL;
}

/* --- Python type -------------------------------------------------------------------------- */

static void free_buffers(RtLoop *self) {
    if (self->locked_bytes) {
        if (self->cap_data) munlock(self->cap_data, self->cap_slots * (self->capture_bytes + self->ref_bytes));
        if (self->play_data) munlock(self->play_data, self->play_slots * (self->playback_bytes + self->ref_bytes));
    }
    free(self->cap_data);
    free(self->cap_meta);
    free(self->play_data);
    free(self->scratch);
    free(self->silence);
    self->cap_data = self->play_data = self->scratch = self->silence = NULL;
    self->cap_meta = NULL;
    if (self->stack != NULL) {
        munmap(self->stack, STACK_BYTES);
        self->stack = NULL;
    }
    self->locked_bytes = 0;
}

static int join_thread(RtLoop *self, double timeout) {
    if (!self->thread_started) return 0;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t ns = deadline.tv_nsec + (int64_t)(timeout * 1e9);
    deadline.tv_sec += ns / 1000000000LL;
    deadline.tv_nsec = ns % 1000000000LL;
    int err = pthread_timedjoin_np(self->thread, NULL, &deadline);
    if (err != 0) return err;
    self->thread_started = 0;
    return 0;
}

static void RtLoop_dealloc(RtLoop *self) {
    atomic_store(&self->stop, 1);
    if (self->thread_started) {
        Py_BEGIN_ALLOW_THREADS
        join_thread(self, 5.0);
        Py_END_ALLOW_THREADS
    }
    if (self->thread_started) {
        /* blocked in the device: leave it its memory (leaked) rather than free it under it */
        pthread_detach(self->thread);
        return;
    } else {
        close_devices(self);
        free_buffers(self);
        pthread_mutex_destroy(&self->mutex);
        pthread_cond_destroy(&self->cond);
    }
    PyMem_Free(self->capture_name);
    PyMem_Free(self->playback_name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static char *copy_string(const char *text) {
    size_t n = strlen(text) + 1;
    char *out = PyMem_Malloc(n);
    if (out != NULL) memcpy(out, text, n);
    return out;
}

static int RtLoop_init(RtLoop *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"capture_device", "playback_device", "capture_channels",
                               "capture_rate", "sample_bytes", "capture_period",
                               "playback_channels", "playback_rate", "playback_period",
                               "reference_samples", "buffer_periods", "prefill_periods",
                               "ring_periods", "playback_ring_periods", "rt_priority", "paced", NULL};
    const char *capture, *playback;
    unsigned int cap_ch, cap_rate, play_ch, play_rate, buffer_periods, prefill_periods;
    int sample_bytes, rt_priority, paced = 1;
    unsigned long cap_period, play_period, ref_samples, ring, play_ring;
    if (self->capture_name != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Loop.__init__ called twice");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ssIIikIIkkIIkki|p", keywords, &capture, &playback,
                                     &cap_ch, &cap_rate, &sample_bytes, &cap_period, &play_ch,
                                     &play_rate, &play_period, &ref_samples, &buffer_periods,
                                     &prefill_periods, &ring, &play_ring, &rt_priority, &paced))
        return -1;
    if (sample_bytes != 2 && sample_bytes != 4) {
        PyErr_SetString(PyExc_ValueError, "sample_bytes must be 2 (S16_LE) or 4 (S32_LE)");
        return -1;
    }
    if (cap_ch == 0 || play_ch == 0 || cap_period == 0 || play_period == 0 || ref_samples == 0 ||
        buffer_periods < 2 || prefill_periods >= buffer_periods || ring < 2 || play_ring < 1) {
        PyErr_SetString(PyExc_ValueError, "channels, periods and rings must be positive; "
                                          "buffer_periods >= 2 and prefill_periods < buffer_periods");
        return -1;
    }
    self->capture_name = copy_string(capture);
    self->playback_name = copy_string(playback);
    if (self->capture_name == NULL || self->playback_name == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->capture_channels = cap_ch;
    self->capture_rate = cap_rate;
    self->sample_bytes = sample_bytes;
    self->capture_period = cap_period;
    self->playback_channels = play_ch;
    self->playback_rate = play_rate;
    self->playback_period = play_period;
    self->ref_bytes = ref_samples * 2;
    self->buffer_periods = buffer_periods;
    self->prefill_periods = prefill_periods;
    self->cap_slots = pow2_at_least(ring);
    self->play_slots = pow2_at_least(play_ring + 1);
    self->rt_priority = rt_priority;
    self->paced = paced;
    self->capture_bytes = cap_period * cap_ch * (size_t)sample_bytes;
    self->playback_bytes = play_period * play_ch * 2u;
    self->rt_error = -1;
    self->mlock_error = -1;
    /* The loop thread takes this mutex to wake a waiting reader. The reader is an ordinary
     * Python thread: if it is preempted while holding the mutex, the SCHED_FIFO loop would
     * wait for it, for as long as the scheduler keeps the reader off a CPU (priority
     * inversion). Priority inheritance lends the holder the loop's priority meanwhile. */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&self->mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_cond_init(&self->cond, NULL);
    return 0;
}

static int allocate(RtLoop *self) {
    size_t cap_size = self->cap_slots * (self->capture_bytes + self->ref_bytes);
    size_t play_size = self->play_slots * (self->playback_bytes + self->ref_bytes);
    self->cap_data = calloc(1, cap_size);
    self->cap_meta = calloc(self->cap_slots, sizeof(SlotMeta));
    self->play_data = calloc(1, play_size);
    self->scratch = calloc(1, self->capture_bytes);
    self->silence = calloc(1, self->playback_bytes);
    self->stack = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (self->stack == MAP_FAILED) self->stack = NULL;
    if (!self->cap_data || !self->cap_meta || !self->play_data || !self->scratch || !self->silence || !self->stack)
        return -ENOMEM;
    self->mlock_error = 0;
    if (mlock(self->cap_data, cap_size) != 0 || mlock(self->play_data, play_size) != 0 ||
        mlock(self->stack, STACK_BYTES) != 0 || mlock(self->cap_meta, self->cap_slots * sizeof(SlotMeta)) != 0)
        self->mlock_error = errno;
    else
        self->locked_bytes = cap_size + play_size + STACK_BYTES;
    return 0;
}

static PyObject *raise_alsa(int err, const char *where, const char *name) {
    PyObject *exc = Py_BuildValue("(iss)", -err, snd_strerror(err), where);
    if (exc != NULL) {
        PyErr_SetObject(PyExc_OSError, exc);
        Py_DECREF(exc);
    }
    (void)name;
    return NULL;
}

/* start(): open the devices, pre-fill, start the thread. Raises OSError(errno, text, where). */
static PyObject *RtLoop_start(RtLoop *self, PyObject *Py_UNUSED(ignored)) {
    if (self->thread_started || self->capture != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the loop is already started (one start per Loop)");
        return NULL;
    }
    int err;
    const char *where = "capture";
    Py_BEGIN_ALLOW_THREADS
    err = allocate(self);
    if (err == 0) err = open_devices(self, &where);
    Py_END_ALLOW_THREADS
    if (err < 0) {
        close_devices(self);
        free_buffers(self);
        return raise_alsa(err, where, self->capture_name);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, self->stack, STACK_BYTES);
    err = pthread_create(&self->thread, &attr, loop_main, self);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        close_devices(self);
        free_buffers(self);
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    self->thread_started = 1;
    return Py_BuildValue("{s:I,s:I,s:k}", "capture_rate", self->capture_rate, "playback_rate",
                         self->playback_rate, "playback_buffer", (unsigned long)self->playback_buffer);
}

/* stop(timeout=5.0) -> bool: True when the thread ended and the devices are closed. */
static PyObject *RtLoop_stop(RtLoop *self, PyObject *args) {
    double timeout = 5.0;
    if (!PyArg_ParseTuple(args, "|d", &timeout)) return NULL;
    atomic_store(&self->stop, 1);
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    err = join_thread(self, timeout);
    if (err == 0) close_devices(self);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(err == 0);
}

/* read(timeout) -> (index, capture bytes, reference bytes, flags, delay_frames, late_ns,
 * done_ns) or None on timeout. Raises OSError once the loop ended on a device error and
 * EOFError once it was stopped and the ring is drained. */
static PyObject *RtLoop_read(RtLoop *self, PyObject *arg) {
    double timeout = PyFloat_AsDouble(arg);
    if (timeout == -1.0 && PyErr_Occurred()) return NULL;
    if (!self->thread_started && self->cap_data == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the loop is not started");
        return NULL;
    }
    uint64_t tail = atomic_load_explicit(&self->cap_tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&self->cap_head, memory_order_acquire);
    if (head == tail && timeout > 0) {
        struct timespec deadline;
        Py_BEGIN_ALLOW_THREADS
        clock_gettime(CLOCK_REALTIME, &deadline);
        int64_t ns = deadline.tv_nsec + (int64_t)(timeout * 1e9);
        deadline.tv_sec += ns / 1000000000LL;
        deadline.tv_nsec = ns % 1000000000LL;
        pthread_mutex_lock(&self->mutex);
        atomic_store_explicit(&self->waiting, 1, memory_order_seq_cst);
        while ((head = atomic_load_explicit(&self->cap_head, memory_order_seq_cst)) == tail &&
               !atomic_load(&self->finished)) {
            if (pthread_cond_timedwait(&self->cond, &self->mutex, &deadline) == ETIMEDOUT) break;
        }
        atomic_store_explicit(&self->waiting, 0, memory_order_relaxed);
        pthread_mutex_unlock(&self->mutex);
        Py_END_ALLOW_THREADS
    }
    if (head == tail) {
        if (atomic_load(&self->finished)) {
            if (self->error != 0) return raise_alsa(self->error, self->error_where, self->capture_name);
            PyErr_SetString(PyExc_EOFError, "the loop has stopped");
            return NULL;
        }
        Py_RETURN_NONE;
    }
    size_t slot_bytes = self->capture_bytes + self->ref_bytes;
    const uint8_t *slot = self->cap_data + (tail & (self->cap_slots - 1)) * slot_bytes;
    const SlotMeta *meta = &self->cap_meta[tail & (self->cap_slots - 1)];
    PyObject *result = Py_BuildValue(
        "(Ky#y#ILLL)", (unsigned long long)meta->index, (const char *)slot, (Py_ssize_t)self->capture_bytes,
        (const char *)(slot + self->capture_bytes), (Py_ssize_t)self->ref_bytes, meta->flags,
        (long long)meta->delay_frames, (long long)meta->late_ns, (long long)meta->done_ns);
    atomic_store_explicit(&self->cap_tail, tail + 1, memory_order_release);
    return result;
}

/* write(device_bytes, reference_bytes) -> bool: False when the playback ring is full. */
static PyObject *RtLoop_write(RtLoop *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "write(device_bytes, reference_bytes)");
        return NULL;
    }
    if (self->play_data == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the loop is not started");
        return NULL;
    }
    Py_buffer dev, ref;
    if (PyObject_GetBuffer(args[0], &dev, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &ref, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&dev);
        return NULL;
    }
    PyObject *result = NULL;
    if ((size_t)dev.len != self->playback_bytes || (size_t)ref.len != self->ref_bytes) {
        PyErr_Format(PyExc_ValueError, "write: %zd and %zd bytes, expected %zu and %zu", dev.len, ref.len,
                     self->playback_bytes, self->ref_bytes);
    } else {
        uint64_t head = atomic_load_explicit(&self->play_head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&self->play_tail, memory_order_acquire);
        if (head - tail >= self->play_slots) {
            result = Py_False;
        } else {
            uint8_t *slot = self->play_data + (head & (self->play_slots - 1)) * (self->playback_bytes + self->ref_bytes);
            memcpy(slot, dev.buf, self->playback_bytes);
            memcpy(slot + self->playback_bytes, ref.buf, self->ref_bytes);
            atomic_store_explicit(&self->play_head, head + 1, memory_order_release);
            result = Py_True;
        }
        Py_INCREF(result);
    }
    PyBuffer_Release(&dev);
    PyBuffer_Release(&ref);
    return result;
}

static PyObject *RtLoop_play_queued(RtLoop *self, PyObject *Py_UNUSED(ignored)) {
    uint64_t head = atomic_load(&self->play_head);
    uint64_t tail = atomic_load(&self->play_tail);
    return PyLong_FromUnsignedLongLong(head - tail);
}

/* discard() -> int: drop every queued playback period the loop has not taken yet; returns
 * how many. Exact: the loop claims a period (compare-and-swap) before it writes it. */
static PyObject *RtLoop_discard(RtLoop *self, PyObject *Py_UNUSED(ignored)) {
    uint64_t head = atomic_load(&self->play_head);
    uint64_t tail = atomic_load(&self->play_tail);
    while (tail != head && !atomic_compare_exchange_weak(&self->play_tail, &tail, head)) {
    }
    return PyLong_FromUnsignedLongLong(head - tail);
}

static PyObject *RtLoop_captured_queued(RtLoop *self, PyObject *Py_UNUSED(ignored)) {
    uint64_t head = atomic_load(&self->cap_head);
    uint64_t tail = atomic_load(&self->cap_tail);
    return PyLong_FromUnsignedLongLong(head - tail);
}

/* inject(code, count): the next count capture reads return code (a negative errno) instead
 * of reading the device — a stand-in for a failing PCM in tests. */
static PyObject *RtLoop_inject(RtLoop *self, PyObject *args) {
    int code, count;
    if (!PyArg_ParseTuple(args, "ii", &code, &count)) return NULL;
    if (code >= 0) {
        PyErr_SetString(PyExc_ValueError, "inject a negative errno, e.g. -errno.EPIPE");
        return NULL;
    }
    atomic_store(&self->inject_code, code);
    atomic_store(&self->inject_count, count);
    Py_RETURN_NONE;
}

static PyObject *RtLoop_stats(RtLoop *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *hist = PyTuple_New(LATE_BUCKETS);
    if (hist == NULL) return NULL;
    for (int i = 0; i < LATE_BUCKETS; i++)
        PyTuple_SET_ITEM(hist, i, PyLong_FromUnsignedLongLong(atomic_load(&self->late_hist[i])));
    PyObject *bounds = PyTuple_New(LATE_BUCKETS - 1);
    if (bounds == NULL) {
        Py_DECREF(hist);
        return NULL;
    }
    for (int i = 0; i < LATE_BUCKETS - 1; i++)
        PyTuple_SET_ITEM(bounds, i, PyFloat_FromDouble(LATE_BOUNDS_NS[i] / 1e6));
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:K,s:d,s:d,s:d,s:i,s:i,s:n,s:O,s:i,s:s}", "periods",
        (unsigned long long)atomic_load(&self->periods), "overruns",
        (unsigned long long)atomic_load(&self->overruns), "underruns",
        (unsigned long long)atomic_load(&self->underruns), "play_empty",
        (unsigned long long)atomic_load(&self->play_empty), "ring_dropped",
        (unsigned long long)atomic_load(&self->ring_dropped), "late_histogram", hist,
        "late_bounds_ms", bounds, "late_ge_buffer", (unsigned long long)atomic_load(&self->late_ge_buffer),
        "late_max_ms", atomic_load(&self->late_max_ns) / 1e6, "work_max_ms",
        atomic_load(&self->work_max_ns) / 1e6, "thread_cpu_s", atomic_load(&self->thread_cpu_ns) / 1e9,
        "rt_error", self->rt_error, "mlock_error", self->mlock_error, "locked_bytes",
        (Py_ssize_t)self->locked_bytes, "running",
        (self->thread_started && !atomic_load(&self->finished)) ? Py_True : Py_False, "error",
        self->error, "error_where", self->error_where);
}

static PyMethodDef RtLoop_methods[] = {
    {"start", (PyCFunction)RtLoop_start, METH_NOARGS, "Open the PCMs and start the loop thread."},
    {"stop", (PyCFunction)RtLoop_stop, METH_VARARGS, "Stop and join the thread, close the PCMs."},
    {"read", (PyCFunction)RtLoop_read, METH_O, "The next captured period (waits without the GIL)."},
    {"write", (PyCFunction)(void (*)(void))RtLoop_write, METH_FASTCALL, "Queue one playback period."},
    {"play_queued", (PyCFunction)RtLoop_play_queued, METH_NOARGS, "Playback periods queued."},
    {"discard", (PyCFunction)RtLoop_discard, METH_NOARGS, "Discard the queued playback periods."},
    {"captured_queued", (PyCFunction)RtLoop_captured_queued, METH_NOARGS, "Captured periods queued."},
    {"inject", (PyCFunction)RtLoop_inject, METH_VARARGS, "Test hook: fail the next reads."},
    {"stats", (PyCFunction)RtLoop_stats, METH_NOARGS, "Counters and the real-time status."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RtLoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "edgevoice.audio._rtloop.Loop",
    .tp_basicsize = sizeof(RtLoop),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The duplex period loop on its own thread (see the module source).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RtLoop_init,
    .tp_dealloc = (destructor)RtLoop_dealloc,
    .tp_methods = RtLoop_methods,
};

static struct PyModuleDef rtloop_module = {
    PyModuleDef_HEAD_INIT, "_rtloop", "The duplex period loop in C (libasound, its own thread).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rtloop(void) {
    if (PyType_Ready(&RtLoopType) < 0) return NULL;
    PyObject *module = PyModule_Create(&rtloop_module);
    if (module == NULL) return NULL;
    Py_INCREF(&RtLoopType);
    if (PyModule_AddObject(module, "Loop", (PyObject *)&RtLoopType) < 0) {
        Py_DECREF(&RtLoopType);
        Py_DECREF(module);
        return NULL;
    }
    PyModule_AddIntConstant(module, "FLAG_OVERRUN", RT_FLAG_OVERRUN);
    PyModule_AddIntConstant(module, "FLAG_UNDERRUN", RT_FLAG_UNDERRUN);
    PyModule_AddIntConstant(module, "FLAG_PLAY_EMPTY", RT_FLAG_PLAY_EMPTY);
    PyModule_AddIntConstant(module, "FLAG_RING_DROPPED", RT_FLAG_RING_DROPPED);
    PyModule_AddIntConstant(module, "FLAG_FIRST", RT_FLAG_FIRST);
    return module;
}
