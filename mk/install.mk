# SPDX-License-Identifier: GPL-2.0
# Install and uninstall every part, as a Debian package would lay it out
# (README.md, "Deploying"):
#
#   make install [PREFIX=/usr/local] [DESTDIR=]   esactl, esa-ps and
#       esa-agent in sbin, esa-jobs in bin, libesa (libesa.so.2
#       and its links, libesa.a) in lib/TRIPLET with esa.pc, esa.h as
#       include/esa/esa.h, the BPF objects in lib/esa, man pages, bash
#       completions, systemd units (packaging/systemd: esa-switch, esa-ps,
#       esa-agent, esa-metrics), the Python package, and the example
#       configurations in SYSCONFDIR/esa (packaging/esa: switch.conf,
#       ps.conf, agent.conf; never over one that is there)
#   make uninstall [PREFIX=] [DESTDIR=]            all of it again (a
#       configuration file only if it is still the example)
#
# Directories follow the GNU names; with PREFIX=/usr, SYSCONFDIR is /etc
# and the Python package goes to /usr/lib/python3/dist-packages, as
# Debian's own packages.  The Python package is installed by pip, offline
# (--no-index --no-build-isolation: no PyPI), from a copy in the build tree,
# with its metadata (esa-VERSION.dist-info) but no build path (direct_url).

PREFIX		?= /usr/local
BINDIR		?= $(PREFIX)/bin
SBINDIR		?= $(PREFIX)/sbin
LIBDIR		?= $(PREFIX)/lib/$(TRIPLET)
INCLUDEDIR	?= $(PREFIX)/include
DATADIR		?= $(PREFIX)/share
MANDIR		?= $(DATADIR)/man
BPFDIR		?= $(PREFIX)/lib/esa
UNITDIR		?= $(PREFIX)/lib/systemd/system
COMPLETIONDIR	?= $(DATADIR)/bash-completion/completions
SYSCONFDIR	?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
PYTHON		?= /usr/bin/python3
PYTHONDIR	?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(shell \
		   $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages)

ESA_JOBS_SHARED	:= $(OUTPUT)/shared/esa-jobs
ESA_PC		:= $(OUTPUT)/esa.pc
UNITS		:= $(wildcard packaging/systemd/*.service packaging/systemd/*.timer)
CONFS		:= $(wildcard packaging/esa/*.conf)

# What goes where: SOURCE:DEST:MODE.  Entries whose source is missing are
# skipped by install; uninstall removes every DEST.
INSTALL_FILES := \
	$(OUTPUT)/esactl:$(SBINDIR)/esactl:755 \
	$(ESA_PS):$(SBINDIR)/esa-ps:755 \
	$(OUTPUT)/esa-agent:$(SBINDIR)/esa-agent:755 \
	$(ESA_JOBS_SHARED):$(BINDIR)/esa-jobs:755 \
	$(LIBESA_REAL):$(LIBDIR)/$(notdir $(LIBESA_REAL)):644 \
	$(LIBESA_A):$(LIBDIR)/libesa.a:644 \
	$(ESA_PC):$(LIBDIR)/pkgconfig/esa.pc:644 \
	user/lib/esa.h:$(INCLUDEDIR)/esa/esa.h:644 \
	$(OUTPUT)/esa.bpf.o:$(BPFDIR)/esa.bpf.o:644 \
	$(OUTPUT)/esa_kfunc.bpf.o:$(BPFDIR)/esa_kfunc.bpf.o:644 \
	$(OUTPUT)/esa_pass.bpf.o:$(BPFDIR)/esa_pass.bpf.o:644 \
	user/esactl/esactl.8:$(MANDIR)/man8/esactl.8:644 \
	user/ps/esa-ps.8:$(MANDIR)/man8/esa-ps.8:644 \
	user/agent/esa-agent.8:$(MANDIR)/man8/esa-agent.8:644 \
	user/jobs/esa-jobs.1:$(MANDIR)/man1/esa-jobs.1:644 \
	user/lib/libesa.3:$(MANDIR)/man3/libesa.3:644 \
	user/esactl/esactl.bash:$(COMPLETIONDIR)/esactl:644 \
	user/ps/esa-ps.bash:$(COMPLETIONDIR)/esa-ps:644 \
	user/jobs/esa-jobs.bash:$(COMPLETIONDIR)/esa-jobs:644 \
	user/agent/esa-agent.bash:$(COMPLETIONDIR)/esa-agent:644 \
	$(INSTALL_EXTRA_FILES)
# Links: DEST:TARGET (the soname's and -lesa's).
INSTALL_LINKS := $(LIBDIR)/$(LIBESA_SONAME):$(notdir $(LIBESA_REAL)) \
	$(LIBDIR)/libesa.so:$(LIBESA_SONAME)

.PHONY: install uninstall

# esa-jobs as a Debian package ships it: on the shared libesa (libesa.so.2,
# no rpath), where build/esa-jobs, for the tests, has it built in.
$(ESA_JOBS_SHARED): $(JOBS_SRCS) $(JOBS_DIR)/jobs.h user/common/daemon.h $(LIBESA_SO) $(LIB_HDRS) \
		| $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -I$(LIB_DIR) $(JOBS_SRCS) -L$(OUTPUT) -lesa $(LIB_LIBS) -lpthread -o $@

# The paths are install's: regenerated when they change (a FORCE and a
# compare keep it from rebuilding when they do not).
$(ESA_PC): FORCE | $(OUTPUT)
	$(Q){ echo "prefix=$(PREFIX)"; \
	     echo "libdir=$(patsubst $(PREFIX)/%,\$${prefix}/%,$(LIBDIR))"; \
	     echo "includedir=$(patsubst $(PREFIX)/%,\$${prefix}/%,$(INCLUDEDIR))"; echo; \
	     echo "Name: esa"; \
	     echo "Description: libesa, the worker library of ESA in-network aggregation"; \
	     echo "Version: $(LIBESA_VERSION)"; \
	     echo "Libs: -L\$${libdir} -lesa"; echo "Libs.private: -lm"; \
	     echo "Cflags: -I\$${includedir}"; } > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

install: all $(ESA_JOBS_SHARED) $(ESA_PC)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)for f in $(INSTALL_FILES); do \
		src=$${f%%:*} rest=$${f#*:}; dst=$${rest%:*} mode=$${rest##*:}; \
		[ -e "$$src" ] || continue; \
		install -D -m $$mode "$$src" "$(DESTDIR)$$dst" || exit 1; \
	done
	$(Q)for l in $(INSTALL_LINKS); do ln -sf "$${l#*:}" "$(DESTDIR)$${l%%:*}" || exit 1; done
	$(Q)for u in $(UNITS); do \
		install -d "$(DESTDIR)$(UNITDIR)" && \
		sed 's|@SBINDIR@|$(SBINDIR)|g; s|@BINDIR@|$(BINDIR)|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
			"$$u" > "$(DESTDIR)$(UNITDIR)/$${u##*/}" || exit 1; \
	done
	$(Q)for c in $(CONFS); do \
		dst="$(DESTDIR)$(SYSCONFDIR)/esa/$${c##*/}"; \
		[ -e "$$dst" ] || install -D -m 644 "$$c" "$$dst" || exit 1; \
	done
	$(Q)rm -rf $(OUTPUT)/python "$(DESTDIR)$(PYTHONDIR)"/esa-*.dist-info && \
		cp -r user/python $(OUTPUT)/python && \
		PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m pip install -q --no-index --no-build-isolation \
			--no-deps --no-compile --upgrade --disable-pip-version-check \
			--target "$(DESTDIR)$(PYTHONDIR)" $(OUTPUT)/python 2>&1 | \
			grep -v "^WARNING: Running pip as the 'root' user\|^WARNING: Target directory" >&2; \
		[ -e "$(DESTDIR)$(PYTHONDIR)/esa/__init__.py" ] || \
			{ echo "install: pip did not install the Python package" >&2; exit 1; }
	$(Q)for d in "$(DESTDIR)$(PYTHONDIR)"/esa-*.dist-info; do \
		rm -f "$$d/direct_url.json" && sed -i '/^[^,]*direct_url.json,/d' "$$d/RECORD"; \
	done
	$(Q)rm -rf $(OUTPUT)/python

# Everything install put there, and the directories of ours it made.
uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)for f in $(INSTALL_FILES) $(INSTALL_LINKS); do \
		rest=$${f#*:}; case $$f in *:*:*) dst=$${rest%:*} ;; *) dst=$${f%%:*} ;; esac; \
		rm -f "$(DESTDIR)$$dst"; \
	done
	$(Q)for u in $(UNITS); do rm -f "$(DESTDIR)$(UNITDIR)/$${u##*/}"; done
	$(Q)for c in $(CONFS); do \
		dst="$(DESTDIR)$(SYSCONFDIR)/esa/$${c##*/}"; \
		if cmp -s "$$c" "$$dst"; then rm -f "$$dst"; \
		elif [ -e "$$dst" ]; then echo "uninstall: $$dst changed: kept" >&2; fi; \
	done
	$(Q)for r in "$(DESTDIR)$(PYTHONDIR)"/esa-*.dist-info/RECORD; do \
		[ -e "$$r" ] || continue; \
		( cd "$(DESTDIR)$(PYTHONDIR)" && cut -d, -f1 "$$r" | while read -r p; do \
			case $$p in esa/*|esa-*.dist-info/*) rm -f "$$p" ;; esac; done ); \
	done
	$(Q)rm -rf "$(DESTDIR)$(PYTHONDIR)/esa/__pycache__"
	$(Q)for d in "$(DESTDIR)$(PYTHONDIR)"/esa-*.dist-info "$(DESTDIR)$(PYTHONDIR)/esa" \
		"$(DESTDIR)$(INCLUDEDIR)/esa" "$(DESTDIR)$(BPFDIR)" "$(DESTDIR)$(SYSCONFDIR)/esa"; do \
		[ -d "$$d" ] && rmdir "$$d" 2>/dev/null; :; \
	done
