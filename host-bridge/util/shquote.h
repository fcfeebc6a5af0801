/*
 * host-bridge/util/shquote: a command line for a POSIX shell on another
 * machine (cli/remote.c: what `ssh MACHINE LINE` has the remote user's
 * shell run). Each word is put in single quotes, a ' in it as '\'' (close,
 * an escaped quote, open again): inside single quotes a POSIX shell takes
 * every byte as it is ($, `, \, newlines, globs, ';' included), so the
 * words arrive byte for byte whatever they hold. A word can hold no NUL
 * (nor can an argv). A shell that is not POSIX (csh, fish) reads such a
 * line otherwise: the remote user's login shell must be sh-like.
 */
#ifndef BUREAU_HB_SHQUOTE_H
#define BUREAU_HB_SHQUOTE_H

/* The remote shell's command line: prog as it is (a program name the
 * caller knows, never quoted), then " 'word'" for each of words[0..n).
 * malloc'd, NULL when out of memory. */
char *sh_line(const char *prog, char *const *words, int n);

#endif
