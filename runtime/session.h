// fusert::Session (the public API, fusert/fusert.h) for fusert's own tools and tests: also
// brings the definitions of the internal types its introspection accessors return (graph,
// fusion plan, execution plan, model spec), which an installed application does not have.
#pragma once

#include "fusert/fusert.h"
#include "graph/fusion/group.h"
#include "graph/ir.h"
#include "graph/loader/model_loader.h"
#include "runtime/execution_plan.h"
#include "runtime/options.h"
#include "runtime/session_impl.h"  // and what it brings (backend, shape cache), as before
