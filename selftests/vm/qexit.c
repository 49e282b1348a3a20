// SPDX-License-Identifier: GPL-2.0
/*
 * qexit CODE: end the test VM with qemu exit status 2 * CODE + 1, through
 * qemu's isa-debug-exit device at I/O port 0xf4; where there is no such
 * device, power off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/io.h>
#include <sys/reboot.h>

int main(int argc, char **argv)
{
	unsigned int code = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;

	sync();
	if (!ioperm(0xf4, 4, 1))
		outl(code, 0xf4);
	reboot(RB_POWER_OFF);
	perror("qexit");
	return 1;
}
