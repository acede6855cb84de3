// infer --input a.jpg --input b.png ... / --input DIR: image classification in batches.
#pragma once

#include "apps/infer/options.h"
#include "runtime/session.h"

namespace fusert::app {

/// The image files of o.images: each a file, or a directory's .png/.jpg/.jpeg/.bmp/.gif/.tga
/// files in name order. Errors: a path that does not exist, a directory without images.
Result<std::vector<std::string>> collect_images(const std::vector<std::string>& paths);

/// Decodes and preprocesses every image (as the model declares), runs them in batches of
/// o.batch_size (capped by the model's batch range; 1 for a model of fixed batch 1), prints
/// each image's top-k classes and a throughput line, and with o.output writes the first output
/// of every image as [n, ...] f32 in input order. Errors name the file that fails to decode.
Status run_images(Session& s, const InferOptions& o);

/// Several .npy tensors (every --input ends in .npy): each runs alone through the one session,
/// at its own shape (a model with symbolic dims plans each new shape once); prints each
/// output's shape and the plan cache's counts. With o.output "out.npy" the first output of
/// input k is written to "out.k.npy". Errors name the file.
Status run_tensors(Session& s, const InferOptions& o);

}  // namespace fusert::app
