// The TFRecord framing of --tensorboard: CRC-32C against its published check
// value, and the masking TFRecord applies (the tensorboard package's reader
// checks both; apps.tensorboard_roundtrip reads whole files).
#include "training/tensorboard_writer.h"

#include <catch2/catch.hpp>
#include <cstring>

using namespace ort_train;

TEST_CASE("tensorboard: CRC-32C and TFRecord's mask") {
  const char* check = "123456789";
  CHECK(crc32c(check, std::strlen(check)) == 0xE3069283u);  // the CRC-32C catalogue's check value
  CHECK(crc32c("", 0) == 0u);
  uint32_t c = crc32c(check, 9);
  CHECK(masked_crc32c(check, 9) == ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}
