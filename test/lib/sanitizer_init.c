/*
 * test/lib/sanitizer_init.c -- preloaded right after the ASan runtime into
 * a server that runs the SANITIZE=1 build of paimon_sink (see "Sanitizer
 * builds" in test/lib/cluster.sh); built and installed by make SANITIZE=1
 * as paimon_sink_sanitizer_init.so.
 *
 * Why: a preloaded ASan runtime initializes itself at the first call it
 * intercepts (malloc, ...), and its initialization calls dlerror(), which
 * takes glibc's gettext lock.  PostgreSQL's binary links libraries whose
 * constructors run before any other code and call bindtextdomain() or
 * newlocale() (libgpg-error, libp11-kit): these take that lock, or the
 * locale lock, and then malloc().  ASan then initializes inside the lock;
 * its dlerror() takes the lock again (glibc's internal rwlock ignores the
 * EDEADLK), the two unlocks corrupt it, and the next bindtextdomain() of
 * postgres waits forever.  These wrappers, which the preload puts before
 * glibc's, make one malloc() first, so that ASan initializes outside every
 * glibc lock, and then call glibc's function.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libintl.h>
#include <locale.h>
#include <stdlib.h>

/* asan_init_now makes the preloaded ASan runtime initialize itself, once,
 * by one intercepted malloc(); harmless without ASan. */
static void
asan_init_now(void)
{
	static int	done;
	void	   *volatile p;		/* volatile: the pair is not optimized away */

	if (!done)
	{
		done = 1;
		p = malloc(1);
		free(p);
	}
}

/* next looks up glibc's definition of name (the next one after ours). */
static void *
next(const char *name)
{
	asan_init_now();
	return dlsym(RTLD_NEXT, name);
}

/* bindtextdomain: ASan initialized first, then glibc's. */
char *
bindtextdomain(const char *domainname, const char *dirname)
{
	static char *(*real) (const char *, const char *);

	if (real == NULL)
		real = next("bindtextdomain");
	return real(domainname, dirname);
}

/* bind_textdomain_codeset: ASan initialized first, then glibc's. */
char *
bind_textdomain_codeset(const char *domainname, const char *codeset)
{
	static char *(*real) (const char *, const char *);

	if (real == NULL)
		real = next("bind_textdomain_codeset");
	return real(domainname, codeset);
}

/* textdomain: ASan initialized first, then glibc's. */
char *
textdomain(const char *domainname)
{
	static char *(*real) (const char *);

	if (real == NULL)
		real = next("textdomain");
	return real(domainname);
}

/* newlocale: ASan initialized first, then glibc's. */
locale_t
newlocale(int category_mask, const char *locale, locale_t base)
{
	static locale_t (*real) (int, const char *, locale_t);

	if (real == NULL)
		real = next("newlocale");
	return real(category_mask, locale, base);
}

/* setlocale: ASan initialized first, then glibc's. */
char *
setlocale(int category, const char *locale)
{
	static char *(*real) (int, const char *);

	if (real == NULL)
		real = next("setlocale");
	return real(category, locale);
}
