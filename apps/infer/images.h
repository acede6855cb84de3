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

}  // namespace fusert::app
