#!/bin/bash
# Llama-3-70B-like pretraining on 64 nodes
CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8 --nnodes 64 --node_rank 0 \
    pretrain_gpt.py \
    --num-layers 80 --hidden-size 8192 --num-attention-heads 64 \
    --group-query-attention --num-query-groups 8 \
    --ffn-hidden-size 28672 --swiglu --untie-embeddings-and-output-weights \
    --seq-length 8192 --max-position-embeddings 8192 --vocab-size 128256 \
    --normalization RMSNorm --position-embedding-type rope \
    --attention-dropout 0.0 --hidden-dropout 0.0 \
    --micro-batch-size 1 --global-batch-size 512 \
    --bf16 --use-flash-attn \
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 \
    --num-layers-per-virtual-pipeline-stage 5 \
    --sequence-parallel --use-distributed-optimizer \
    --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap \
    --recompute-activations \
    --lr 1.5e-4 --min-lr=1.5e-5 --lr-decay-style cosine \
    --data-path "/data/my corpus/text_document" --save '/ckpt/llama 70b' \
    --log-interval 10 --eval-iters 0 --distributed-backend nccl
