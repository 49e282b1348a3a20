// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: conversion loops between the caller's buffers and packet values.
 *
 * Float32 uses block fixed point (docs/library.md): all ranks agree on the
 * largest exponent of each block of values (the block's E, 2^E above every
 * magnitude), and quantize with q = round(x * 2^s), s = 30 - h - E, so
 * |q| <= 2^(30-h) and n ranks sum to at most n 2^(30-h) <= 2^30 when
 * 2^h >= n.  Scaling by a power of two is exact, so a value's only error is
 * the rounding to an integer: at most 2^-(s+1).
 *
 * On x86-64 the loops are written with SSE2 and AVX2 intrinsics, AVX2
 * picked at run time when the CPU has it (gcc -O2 does not vectorize the
 * rounding conversion by itself); elsewhere they are plain C.  Rounding is
 * to nearest, ties to even (the default MXCSR / FPCR mode).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "esa_int.h"

#ifdef __x86_64__
#include <immintrin.h>
#define ESA_X86 1
#endif

int esa_ilog2_ceil(unsigned n)
{
	int l = 0;

	while ((1u << l) < n)
		l++;
	return l;
}

#ifdef ESA_X86
/* Every worker thread asks: a relaxed atomic keeps the lazy probe race-free. */
static _Atomic int have_avx2 = -1;

static bool use_avx2(void)
{
	int v = atomic_load_explicit(&have_avx2, memory_order_relaxed);

	if (v < 0) {
		v = __builtin_cpu_supports("avx2") ? 1 : 0;
		atomic_store_explicit(&have_avx2, v, memory_order_relaxed);
	}
	return v;
}

__attribute__((target("avx2")))
static uint32_t maxbits_avx2(const uint32_t *b, size_t n, size_t *done)
{
	__m256i m = _mm256_setzero_si256(), mask = _mm256_set1_epi32(0x7fffffff);
	uint32_t t[8], r = 0;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		m = _mm256_max_epu32(m, _mm256_and_si256(
			_mm256_loadu_si256((const __m256i *)(b + i)), mask));
	_mm256_storeu_si256((__m256i *)t, m);
	for (int k = 0; k < 8; k++)
		r = t[k] > r ? t[k] : r;
	*done = i;
	return r;
}
#endif

unsigned esa_q_maxexp(const float *x, size_t n)
{
	const uint32_t *b = (const uint32_t *)x;
	uint32_t m = 0;
	size_t i = 0;

#ifdef ESA_X86
	if (use_avx2())
		m = maxbits_avx2(b, n, &i);
#endif
	for (; i < n; i++) {
		uint32_t v = b[i] & 0x7fffffffu;

		m = v > m ? v : m;
	}
	return m >> 23;
}

/* 2^k as a float, for -126 <= k <= 127. */
static float pow2f(int k)
{
	uint32_t b = (uint32_t)(k + 127) << 23;
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

/*
 * 2^s = f1 * f2 with both factors normal floats, ordered so that the
 * product x * f1 * f2 rounds at most once where it matters: scaling up is
 * exact; scaling down goes to the large end first so only a result already
 * too small for the fixed point (or a subnormal output) can round.
 */
void esa_q_factors(int s, float *f1, float *f2)
{
	if (s > 127) {
		*f1 = pow2f(127);
		*f2 = pow2f(s - 127);
	} else if (s < -126) {
		*f1 = pow2f(s + 126);
		*f2 = pow2f(-126);
	} else {
		*f1 = pow2f(s);
		*f2 = 1.0f;
	}
}

#ifdef ESA_X86
__attribute__((target("avx2")))
static size_t q_avx2(const float *x, size_t n, int32_t *q, float f1, float f2)
{
	__m256 a = _mm256_set1_ps(f1), b = _mm256_set1_ps(f2);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), a), b);

		_mm256_storeu_si256((__m256i *)(q + i), _mm256_cvtps_epi32(v));
	}
	return i;
}

static size_t q_sse2(const float *x, size_t n, int32_t *q, float f1, float f2)
{
	__m128 a = _mm_set1_ps(f1), b = _mm_set1_ps(f2);
	size_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		__m128 v = _mm_mul_ps(_mm_mul_ps(_mm_loadu_ps(x + i), a), b);

		_mm_storeu_si128((__m128i *)(q + i), _mm_cvtps_epi32(v));
	}
	return i;
}

__attribute__((target("avx2")))
static size_t dq_avx2(const int32_t *q, size_t n, float *out, float g1, float g2)
{
	__m256 a = _mm256_set1_ps(g1), b = _mm256_set1_ps(g2);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(q + i)));

		_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(v, a), b));
	}
	return i;
}

static size_t dq_sse2(const int32_t *q, size_t n, float *out, float g1, float g2)
{
	__m128 a = _mm_set1_ps(g1), b = _mm_set1_ps(g2);
	size_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		__m128 v = _mm_cvtepi32_ps(_mm_loadu_si128((const __m128i *)(q + i)));

		_mm_storeu_ps(out + i, _mm_mul_ps(_mm_mul_ps(v, a), b));
	}
	return i;
}
#endif

static void q_loop(const float *x, size_t n, int32_t *q, float f1, float f2)
{
	size_t i = 0;

#ifdef ESA_X86
	i = use_avx2() ? q_avx2(x, n, q, f1, f2) : q_sse2(x, n, q, f1, f2);
#endif
	for (; i < n; i++)
		q[i] = (int32_t)lrintf(x[i] * f1 * f2);
}

void esa_q_f32(const float *x, size_t n, int32_t *q, size_t nvals, int s)
{
	float f1, f2;

	esa_q_factors(s, &f1, &f2);
	q_loop(x, n, q, f1, f2);
	if (n < nvals)
		memset(q + n, 0, (nvals - n) * sizeof(*q));
}

static void dq_loop(const int32_t *q, size_t n, float *out, float g1, float g2)
{
	size_t i = 0;

#ifdef ESA_X86
	i = use_avx2() ? dq_avx2(q, n, out, g1, g2) : dq_sse2(q, n, out, g1, g2);
#endif
	for (; i < n; i++)
		out[i] = (float)q[i] * g1 * g2;
}

void esa_dq_f32(const int32_t *q, size_t n, float *out, int s)
{
	float g1, g2;

	/* |q| >= 1 or 0: q * 2^-126 is normal, so the first step is exact. */
	esa_q_factors(-s, &g1, &g2);
	dq_loop(q, n, out, g1, g2);
}

/* A float chunk no sum came for (a rank had NaN or infinity, or the redo
 * overflowed): NaN in every element. */
void esa_fill_nan(float *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NAN;
}

void esa_q_i32(const int32_t *x, size_t n, int32_t *q, size_t nvals)
{
	memcpy(q, x, n * sizeof(*q));
	if (n < nvals)
		memset(q + n, 0, (nvals - n) * sizeof(*q));
}

void esa_dq_i32(const int32_t *q, size_t n, int32_t *out)
{
	memcpy(out, q, n * sizeof(*q));
}

void esa_q_split(const int32_t *x, size_t n, int32_t *hi, int32_t *lo,
			 size_t nvals)
{
	for (size_t i = 0; i < n; i++) {
		hi[i] = x[i] >> 16;		/* arithmetic: floor(x / 2^16) */
		lo[i] = x[i] & 0xffff;
	}
	for (size_t i = n; i < nvals; i++)
		hi[i] = lo[i] = 0;
}

size_t esa_dq_join(const int32_t *hi, const int32_t *lo, size_t n, int32_t *out)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t v = (int64_t)hi[i] * 65536 + lo[i];

		if (v > INT32_MAX) {
			v = INT32_MAX;
			bad++;
		} else if (v < INT32_MIN) {
			v = INT32_MIN;
			bad++;
		}
		out[i] = (int32_t)v;
	}
	return bad;
}

double esa_f32_error_bound(double block_absmax, double exact_sum, int nworkers,
			   int headroom)
{
	int e, E, h;

	if (nworkers < 1)
		nworkers = 1;
	h = headroom < 0 ? esa_ilog2_ceil(nworkers) : headroom;
	/* E as the library computes it from the float's biased exponent. */
	if (!(block_absmax > 0) || block_absmax < 0x1p-126) {
		e = 0;
	} else {
		frexp(block_absmax, &e);	/* absmax in [2^(e-1), 2^e) */
		e += 126;			/* biased exponent */
		if (e > 254)
			e = 254;
	}
	E = esa_q_E(e);
	return nworkers * ldexp(1.0, E + h - 31) * (1 + 0x1p-23) +
	       0x1p-24 * fabs(exact_sum) + 0x1p-149;
}
