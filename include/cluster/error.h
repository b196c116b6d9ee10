/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: status codes.
 *
 * Every call that can fail returns an lc_status. Zero is success, every
 * error is negative; lc_strerror() names each one. The list is generated
 * from one table (LC_STATUS_LIST) so names, values and messages can never
 * drift apart. Errors are never reported through errno.
 */
#ifndef CLUSTER_ERROR_H
#define CLUSTER_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * X(name, value, message)
 *
 * Which calls return what:
 *   INVAL        any call given a NULL handle, an out-of-range field or
 *                inconsistent configuration.
 *   NOMEM        lc_engine_create(), lc_vcpu_create(), and any call that
 *                translates (allocation failed; nothing was changed).
 *   DECODE_*     lc_decode() and the engine when the guest bytes at RIP
 *                cannot be decoded; the VMM should let the guest run into
 *                the instruction so the CPU raises \#UD or \#PF itself.
 *   UNSUPPORTED  a request this build or this engine state cannot serve;
 *                the message of the call's documentation says which.
 *   BUSY         lc_engine_destroy() while vCPU contexts are still alive.
 *   CALLBACK     a VMM callback reported a failure; the engine stopped
 *                before the instruction that needed it.
 */
#define LC_STATUS_LIST(X)                                                     \
    X(LC_OK,                      0, "success")                             \
    X(LC_ERR_INVAL,              -1, "invalid argument")                    \
    X(LC_ERR_NOMEM,              -2, "out of memory")                       \
    X(LC_ERR_DECODE_INVALID,     -3, "invalid or undefined instruction encoding") \
    X(LC_ERR_DECODE_TRUNCATED,   -4, "instruction bytes end before the instruction does") \
    X(LC_ERR_DECODE_TOO_LONG,    -5, "instruction exceeds the 15-byte architectural limit") \
    X(LC_ERR_UNSUPPORTED,        -6, "operation not supported by this build or state") \
    X(LC_ERR_BUSY,               -7, "object still in use")                 \
    X(LC_ERR_CALLBACK,           -8, "a VMM callback reported failure")     \
    X(LC_ERR_RANGE,              -9, "value out of the accepted range")

/** Status of every call that can fail: LC_OK (0) or a negative error of
 * LC_STATUS_LIST. */
typedef enum lc_status {
#define LC_STATUS_ENUM_(name, value, msg) name = (value),
    LC_STATUS_LIST(LC_STATUS_ENUM_)
#undef LC_STATUS_ENUM_
    LC_STATUS_MIN_ = -9
} lc_status;

/** Human-readable message for a status; never NULL ("unknown status" for
 * values outside the list). The string is static. */
const char *lc_strerror(lc_status status);

/** The enumerator's name as a string ("LC_ERR_INVAL"); never NULL. */
const char *lc_status_name(lc_status status);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_ERROR_H */
