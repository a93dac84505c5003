/* The test programs' global operator new, which fails when told to: an
 * allocation failure put at each allocation of a call in turn. */
#ifndef HALOX_TESTS_FAILING_NEW_H
#define HALOX_TESTS_FAILING_NEW_H

#ifdef __cplusplus
extern "C" {
#endif

/* The allocation after `n` more succeed throws std::bad_alloc (a nothrow new
 * returns NULL), once; n < 0: none fails. */
void failing_new_arm(long n);
/* The failures injected since the last failing_new_arm. */
long failing_new_failures(void);
/* Allocations made and not freed, all program long. */
long failing_new_live(void);

#ifdef __cplusplus
}
#endif

#endif
