/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ESA_KFUNC_H
#define _ESA_KFUNC_H

int esa_kfunc_init(void);

#endif /* _ESA_KFUNC_H */
