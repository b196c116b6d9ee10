/* SPDX-License-Identifier: MIT */
/*
 * libcluster/error.c: status strings (include/cluster/error.h), generated
 * from the public X-macro list, and the version (cluster.h).
 */
#include <cluster/cluster.h>

#define LC_STR_(x) #x
#define LC_XSTR_(x) LC_STR_(x)

const char *lc_strerror(lc_status status)
{
    switch (status) {
#define LC_STATUS_MSG_(name, value, msg) case name: return msg;
    LC_STATUS_LIST(LC_STATUS_MSG_)
#undef LC_STATUS_MSG_
    default:
        return "unknown status";
    }
}

const char *lc_status_name(lc_status status)
{
    switch (status) {
#define LC_STATUS_NAME_(name, value, msg) case name: return #name;
    LC_STATUS_LIST(LC_STATUS_NAME_)
#undef LC_STATUS_NAME_
    default:
        return "LC_ERR_UNKNOWN";
    }
}

uint32_t lc_version(void)
{
    return ((uint32_t)LC_VERSION_MAJOR << 16) |
           ((uint32_t)LC_VERSION_MINOR << 8) | LC_VERSION_PATCH;
}

const char *lc_version_string(void)
{
    return LC_XSTR_(LC_VERSION_MAJOR) "." LC_XSTR_(LC_VERSION_MINOR) "."
           LC_XSTR_(LC_VERSION_PATCH);
}
