// SPDX-License-Identifier: GPL-2.0
/*
 * esa-jobs's tensors (jobs.h): deterministic per (seed, job, iteration,
 * rank), float32 gradient-like (layers of normal values at scales from
 * 1e-5 to 1e-1) or int32 uniform in +-1e6; the reference sums of an
 * iteration, computed here from every rank's tensor; and the check of a
 * result against them: int32 exact, float32 within libesa's bound.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"

static inline uint64_t key(int job, int iter, int rank)
{
	return mix64(g_seed * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)job << 40) ^
		     ((uint64_t)iter << 20) ^ (uint64_t)rank);
}

/* Layers: element i belongs to layer i >> 14; each layer has its scale. */
static inline float layer_scale(int job, int iter, size_t i)
{
	uint64_t h = mix64(key(job, iter, 4095) ^ (i >> 14));

	return (float)pow(10.0, -5.0 + 4.0 * ((h >> 11) * 0x1p-53));
}

void gen(const struct job *j, int iter, int rank, void *buf)
{
	uint64_t k = key(j->id, iter, rank);

	if (j->dtype == ESA_INT32) {
		int32_t *v = buf;

		for (size_t i = 0; i < j->elems; i++)
			v[i] = (int32_t)(mix64(k + i) % 2000001) - 1000000;
		return;
	}
	for (size_t i = 0; i < j->elems; i += 2) {
		/* Box-Muller: two normals from two uniforms */
		uint64_t h = mix64(k + i);
		double u1 = ((h >> 11) + 1) * 0x1p-53, u2 = (mix64(h) >> 11) * 0x1p-53;
		double r = sqrt(-2 * log(u1));
		float s = layer_scale(j->id, iter, i);
		float *v = buf;

		v[i] = (float)(r * cos(2 * M_PI * u2)) * s;
		if (i + 1 < j->elems)
			v[i + 1] = (float)(r * sin(2 * M_PI * u2)) * s;
	}
}

/* The reference sums of an iteration, computed once per job. */
struct ref *ref_get(struct job *j, int iter)
{
	struct ref *r = &j->ref[iter & 1];

	pthread_mutex_lock(&j->lock);
	if (r->iter != iter) {
		size_t bsz = (size_t)j->block * j->nvals, nb = (j->elems + bsz - 1) / bsz;
		void *tmp = malloc(j->elems * 4);

		if (!r->sum) {
			r->sum = malloc(j->elems * sizeof(double));
			r->absmax = calloc(nb, sizeof(float));
			r->bad = calloc(nb, sizeof(bool));
			if (!r->sum || !r->absmax || !r->bad)
				die("out of memory");
		}
		if (!tmp)
			die("out of memory");
		memset(r->sum, 0, j->elems * sizeof(double));
		memset(r->absmax, 0, nb * sizeof(float));
		for (int k = 0; k < j->n; k++) {
			gen(j, iter, k, tmp);
			if (j->dtype == ESA_INT32) {
				for (size_t i = 0; i < j->elems; i++)
					r->sum[i] += ((int32_t *)tmp)[i];
			} else {
				for (size_t i = 0; i < j->elems; i++) {
					float f = ((float *)tmp)[i];

					r->sum[i] += f;
					if (fabsf(f) > r->absmax[i / bsz])
						r->absmax[i / bsz] = fabsf(f);
				}
			}
		}
		free(tmp);
		r->iter = iter;
	}
	pthread_mutex_unlock(&j->lock);
	return r;
}

/* Errors in out against the reference; *worst: largest error / bound. */
size_t check(struct job *j, const struct ref *r, const void *out, double *worst)
{
	size_t bsz = (size_t)j->block * j->nvals, bad = 0;

	for (size_t i = 0; i < j->elems; i++) {
		if (j->dtype == ESA_INT32) {
			double want = r->sum[i];
			int32_t got = ((const int32_t *)out)[i];

			if (got != want && bad++ < 3)
				fprintf(stderr, "esa-jobs: job %d [%zu]: %d, want %.0f\n", j->id, i,
					got, want);
		} else {
			double want = r->sum[i], got = ((const float *)out)[i];
			double b = esa_f32_error_bound(r->absmax[i / bsz], want, j->n, j->headroom);
			double e = fabs(got - want);

			if (!(e <= b)) {
				if (bad++ < 3)
					fprintf(stderr, "esa-jobs: job %d [%zu]: %.9g, want %.9g "
						"(error %.3g > bound %.3g)\n", j->id, i, got, want,
						e, b);
			} else if (e / b > *worst) {
				*worst = e / b;
			}
		}
	}
	return bad;
}
