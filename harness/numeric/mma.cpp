// (being written: Tensor Core MMA models)
