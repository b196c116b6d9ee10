/* SPDX-License-Identifier: MIT */
/*
 * libcluster/engine_int.h: what the adapters inside libcluster/ may see of
 * a vCPU context. Not installed, not exported (names without lc_).
 */
#ifndef LC_LIBCLUSTER_ENGINE_INT_H
#define LC_LIBCLUSTER_ENGINE_INT_H

#include <cluster/engine.h>

const lc_vm_ops *lci_vcpu_ops(const lc_vcpu *vcpu);
void *lci_vcpu_opaque(const lc_vcpu *vcpu);

#endif /* LC_LIBCLUSTER_ENGINE_INT_H */
