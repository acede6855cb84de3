// Host tensors (the base layer): the public fusert/tensor.h, under the path the layers include.
#pragma once

#include "fusert/tensor.h"
#include "graph/base/status.h"  // the error builder and check macros, as before
