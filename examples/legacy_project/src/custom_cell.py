"""A TrainOneStepCell subclass: the grad op comes from MindSpore's base class."""
import mindspore.nn as nn
import mindspore.ops as ops


class ClippedTrainStep(nn.TrainOneStepCell):
    def construct(self, data, label):
        loss = self.network(data, label)
        sens = ops.fill(loss.dtype, loss.shape, self.sens)
        grads = self.grad(self.network, self.weights)(data, label, sens)
        grads = ops.clip_by_global_norm(grads, 1.0)
        self.optimizer(grads)
        return loss
