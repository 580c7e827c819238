// AdamW step over num_parameters floats, many by-value hyperparameters.
__global__ void adamw_kernel(float* params_memory, const float* grads_memory, float* m_memory,
                             float* v_memory, long num_parameters, float learning_rate,
                             float beta1, float beta2, float beta1_correction,
                             float beta2_correction, float eps, float weight_decay) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= num_parameters) return;
    float grad = grads_memory[i];
    float m = beta1 * m_memory[i] + (1.0f - beta1) * grad;
    float v = beta2 * v_memory[i] + (1.0f - beta2) * grad * grad;
    m_memory[i] = m;
    v_memory[i] = v;
    float m_hat = m / beta1_correction;
    float v_hat = v / beta2_correction;
    params_memory[i] -= learning_rate * (m_hat / (sqrtf(v_hat) + eps) +
                                         weight_decay * params_memory[i]);
}

void adamw_step(float* p, const float* g, float* m, float* v, long n, int t) {
    float beta1 = 0.9f, beta2 = 0.999f;
    float b1c = 1.0f - powf(beta1, t), b2c = 1.0f - powf(beta2, t);
    adamw_kernel<<<(n + 511) / 512, 512>>>(p, g, m, v, n, 1e-3f, beta1, beta2, b1c, b2c,
                                           1e-8f, 0.01f);
}
