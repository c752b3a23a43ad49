/* vkgrad/vkgrad.h — everything: include this one header.
 *
 * vkgrad builds training graphs (tensors, ops, autodiff), places each node on
 * a backend (CPU or a Vulkan GPU) with the reason why, and runs them.
 * Start with context.h, then tensor.h, ops.h, graph.h, backend.h, sched.h.
 */
#ifndef VKGRAD_VKGRAD_H
#define VKGRAD_VKGRAD_H

#include "backend.h"
#include "context.h"
#include "graph.h"
#include "ops.h"
#include "sched.h"
#include "tensor.h"
#include "vulkan.h"

#endif
