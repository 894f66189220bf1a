// dce has no failure mode on valid IR; what it rejects is a malformed
// invocation, reported in one line.
// RUN: not vknn-opt %s -p 'dce{aggressive=true}' 2>&1 | FileCheck %s
// CHECK: vknn-opt: error: {{.*}}aggressive

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
