/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa_acc.bpf.h - the slot arithmetic: what a packet does to a slot's
 * accumulators, all under the slot lock (no calls, no loops the verifier
 * cannot bound).
 */
#ifndef _ESA_ACC_BPF_H
#define _ESA_ACC_BPF_H

/*
 * A value v enters an accumulator as v + 2^31 (zero-extended: cheap), so n
 * values sum to s = sum(v) + n * 2^31.  Out, u = s - (n - 1) * 2^31 is the
 * sum plus 2^31: it fits int32 iff u < 2^32, and the int32 is u - 2^31.
 * ESA_BIAS(n) is what to subtract; OR-ing every u together leaves any
 * overflow in the high word, checked once per vector, not per value.
 */
#define ESA_IN(v)	((__u64)((__u32)(v) ^ 0x80000000U))
#define ESA_BIAS(n)	((__u64)((n) - 1) << 31)
#define ESA_OUT(s, bias, ovf)						\
	({								\
		__u64 __u = (s) - (bias);				\
		(ovf) |= __u;						\
		(__u32)__u ^ 0x80000000U;				\
	})

/* Eight values at a time; nvals is a multiple of eight. */
#define ESA_FOR_EACH_VALUE(i)						\
	for ((i) = 0; (i) < ESA_MAX_VALUES && (i) < esa_cfg.nvals; (i) += 8)

static __always_inline void esa_acc_set(__u64 *acc, const __u32 *v)
{
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i + j] = ESA_IN(v[i + j]);
	}
}

static __always_inline void esa_acc_add(__u64 *acc, const __u32 *v)
{
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i + j] += ESA_IN(v[i + j]);
	}
}

/* Packet := acc (+ packet if add) - bias; non-zero on overflow. */
static __always_inline __u64 esa_acc_emit(const __u64 *acc, __u32 *v,
					  int add, __u64 bias)
{
	__u64 ovf = 0;
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++)
			v[i + j] = ESA_OUT(acc[i + j] + (add ? ESA_IN(v[i + j]) : 0),
					   bias, ovf);
	}
	return ovf >> 32;
}

/* The slot takes the packet's values, the packet the slot's old sum. */
static __always_inline __u64 esa_acc_swap(__u64 *acc, __u32 *v, __u64 bias)
{
	__u64 ovf = 0, old;
	__u32 i;

	ESA_FOR_EACH_VALUE(i) {
#pragma unroll
		for (int j = 0; j < 8; j++) {
			old = acc[i + j];
			acc[i + j] = ESA_IN(v[i + j]);
			v[i + j] = ESA_OUT(old, bias, ovf);
		}
	}
	return ovf >> 32;
}

#endif /* _ESA_ACC_BPF_H */
